import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Middleware order")
struct ChainOrderTests {
    private func tracing(_ name: String, into log: Locked<[String]>) -> Middleware {
        Middleware(name: name) { request, next in
            log.withLock { $0.append("→\(name)") }
            let result = try await next(request)
            log.withLock { $0.append("←\(name)") }
            return result
        }
    }

    @Test("the first middleware listed sees the request first and the response last")
    func firstIsOutermost() async throws {
        let log = Locked<[String]>([])
        let client = Client(
            baseURL: URL(string: "https://api.example.test")!,
            transport: MockTransport { _ in
                log.withLock { $0.append("transport") }
                return .ok
            },
            middleware: [tracing("a", into: log), tracing("b", into: log), tracing("c", into: log)]
        )
        _ = try await client.send(URLRequest(url: URL(string: "https://api.example.test/x")!))
        #expect(log.value == ["→a", "→b", "→c", "transport", "←c", "←b", "←a"])
    }

    @Test("middleware appended in update runs nearest the transport, inserted at 0 the outermost")
    func useAppendsInnermost() async throws {
        let log = Locked<[String]>([])
        let client = Client(transport: MockTransport.ok, middleware: [tracing("a", into: log)])
        await client.update { configuration in
            configuration.middleware.append(tracing("b", into: log))
            configuration.middleware.insert(tracing("z", into: log), at: 0)
        }
        _ = try await client.send(URLRequest(url: URL(string: "https://api.example.test/x")!))
        #expect(log.value == ["→z", "→a", "→b", "←b", "←a", "←z"])
    }

    @Test("the design card's closure compiles and can change the request")
    func designCardClosure() async throws {
        let transport = MockTransport.ok
        let client = Client(baseURL: URL(string: "https://api.example.test")!, transport: transport)
        await client.update {
            $0.middleware.append(
                Middleware { request, next in
                    var request = request
                    request.setValue("courier", forHTTPHeaderField: "User-Agent")
                    return try await next(request)
                }
            )
        }
        let _: EmptyResponse = try await client.send(.get("/users/42"))
        let sent = try #require(transport.requests.first)
        #expect(sent.value(forHTTPHeaderField: "User-Agent") == "courier")
        #expect(sent.url?.absoluteString == "https://api.example.test/users/42")
    }
}
