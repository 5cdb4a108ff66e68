import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("MockTransport's script and handler")
struct MockTransportScriptTests {
    @Test("a script answers in order and repeats its last answer")
    func script() async throws {
        let api = MockTransport(.status(503), then: .status(502), .ok)
        var statuses: [Int] = []
        for _ in 0..<5 { statuses.append(try await api.send(request(.get, "/")).1.statusCode) }
        #expect(statuses == [503, 502, 200, 200, 200])
        #expect(api.callCount == 5)
    }

    @Test("a handler sees each request with the mock's call index")
    func handler() async throws {
        let api = MockTransport { request in .text("\(request.method) \(request.path) #\(request.callIndex)") }
        let first = try await api.send(request(.post, "/a"))
        let second = try await api.send(request(.get, "/b"))
        #expect(String(decoding: first.0, as: UTF8.self) == "POST /a #0")
        #expect(String(decoding: second.0, as: UTF8.self) == "GET /b #1")
    }

    @Test("MockTransport.ok answers 200 with an empty body to anything")
    func ok() async throws {
        let (data, response) = try await MockTransport.ok.send(request(.delete, "/anything"))
        #expect(response.statusCode == 200)
        #expect(data.isEmpty)
    }
}
