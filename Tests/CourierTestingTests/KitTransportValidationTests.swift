import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Kit transports refuse unsafe requests like real ones")
struct KitTransportValidationTests {
    private static func unsafeRequest() -> URLRequest {
        var unsafe = request(.get, "/users")
        // URLRequest drops values with CR or LF itself; a name that is not a token gets through to the transport.
        unsafe.setValue("1", forHTTPHeaderField: "X Injected")
        return unsafe
    }

    @Test("a header name that is not a token is refused with invalidRequest and not recorded")
    func refused() async throws {
        let mock = MockTransport.ok
        let holding = HoldingTransport(wrapping: mock)
        holding.open()
        let transports: [any Transport & RequestRecording] = [
            mock,
            holding,
            FaultInjectingTransport(wrapping: mock, seed: 1, faults: []),
        ]
        for transport in transports {
            let error = await #expect(throws: CourierError.self) { try await transport.send(Self.unsafeRequest()) }
            #expect(error?.code == .invalidRequest)
            #expect(transport.requests.isEmpty)
        }
        let viaTestTransport = await #expect(throws: CourierError.self) {
            try await withTestTransport(mock) { try await TestTransport().send(Self.unsafeRequest()) }
        }
        #expect(viaTestTransport?.code == .invalidRequest)
        #expect(mock.requests.isEmpty)
    }
}
