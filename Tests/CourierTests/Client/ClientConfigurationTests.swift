import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Client configuration")
struct ClientConfigurationTests {
    /// A middleware that stamps its name into the `X-Via` header.
    private static func stamp(_ name: String) -> Middleware {
        Middleware(name: name) { request, next in
            var request = request
            request.addValue(name, forHTTPHeaderField: "X-Via")
            return try await next(request)
        }
    }

    private static let request = URLRequest(url: exampleBaseURL)

    /// The `X-Via` stamps of the last request `transport` received, outermost first.
    private func stamps(_ transport: MockTransport) -> [String] {
        let value = transport.requests.last?.value(forHTTPHeaderField: "X-Via") ?? ""
        return value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
    }

    @Test("middleware appended, inserted, replaced or removed by name in update apply to later sends")
    func middlewareChanges() async throws {
        let transport = MockTransport.ok
        let client = Client(transport: transport, middleware: [Self.stamp("a")])
        _ = try await client.send(Self.request)
        #expect(stamps(transport) == ["a"])

        await client.update { $0.middleware += [Self.stamp("b"), Self.stamp("c")] }
        _ = try await client.send(Self.request)
        #expect(stamps(transport) == ["a", "b", "c"])

        await client.update { configuration in
            configuration.middleware.insert(Self.stamp("z"), at: 0)
            configuration.middleware.append(Self.stamp("end"))
        }
        _ = try await client.send(Self.request)
        #expect(stamps(transport) == ["z", "a", "b", "c", "end"])

        await client.update { $0.middleware.append(Self.stamp("b")) }
        await client.update { $0.middleware.removeAll { $0.name == "b" } }
        _ = try await client.send(Self.request)
        #expect(stamps(transport) == ["z", "a", "c", "end"])
        #expect(client.configuration.middleware.compactMap(\.name) == ["z", "a", "c", "end"])

        await client.update { $0.middleware = [Self.stamp("only")] }
        _ = try await client.send(Self.request)
        #expect(stamps(transport) == ["only"])
    }

    @Test("a new transport receives the later requests")
    func transportChange() async throws {
        let first = MockTransport.ok
        let second = MockTransport(.status(202))
        let client = Client(transport: first)
        _ = try await client.send(Self.request)
        await client.update { $0.transport = second }
        let (_, response) = try await client.send(Self.request)
        #expect(response.statusCode == 202)
        #expect(first.callCount == 1)
        #expect(second.callCount == 1)
    }

    @Test("later typed requests resolve against a new base URL")
    func baseURLChange() async throws {
        let transport = MockTransport.ok
        let client = Client(baseURL: exampleBaseURL, transport: transport)
        let _: EmptyResponse = try await client.send(.get("/a"))
        await client.update { $0.baseURL = URL(string: "https://eu.example.test/v2")! }
        let _: EmptyResponse = try await client.send(.get("/a"))
        #expect(
            transport.requests.map { $0.url?.absoluteString } == [
                "https://api.example.test/a", "https://eu.example.test/v2/a",
            ]
        )
        await client.update { $0.baseURL = nil }
        let error = await #expect(throws: CourierError.self) {
            let _: EmptyResponse = try await client.send(.get("/a"))
        }
        #expect(error?.code == .invalidRequest)
    }

    @Test("a new encoder encodes later request bodies")
    func encoderChange() async throws {
        struct Body: Encodable, Sendable { var firstName = "Ada" }
        let transport = MockTransport.ok
        let client = Client(baseURL: exampleBaseURL, transport: transport)
        let snake = JSONEncoder()
        snake.keyEncodingStrategy = .convertToSnakeCase
        await client.update { $0.encoder = snake }
        let _: EmptyResponse = try await client.send(.post("/x", json: Body()))
        #expect(transport.onlyRequest?.bodyText == #"{"first_name":"Ada"}"#)
    }

    @Test("init(configuration:) sets the client up from one value, which reads back unchanged")
    func initFromConfiguration() async throws {
        let transport = MockTransport.ok
        let configuration = Client.Configuration(
            baseURL: URL(string: "https://eu.example.test/v2")!,
            transport: transport,
            middleware: [Self.stamp("a"), Self.stamp("b")],
            isCancellableOnShutdown: true
        )
        let client = Client(configuration: configuration)

        let _: EmptyResponse = try await client.send(.get("/x"))

        #expect(transport.onlyRequest?.url?.absoluteString == "https://eu.example.test/v2/x")
        #expect(stamps(transport) == ["a", "b"])
        #expect(client.configuration.baseURL == configuration.baseURL)
        #expect(client.configuration.middleware.compactMap(\.name) == ["a", "b"])
        #expect(client.configuration.isCancellableOnShutdown)
    }

    @Test("an update whose body throws changes nothing")
    func throwingUpdate() async throws {
        struct Refused: Error {}
        let transport = MockTransport.ok
        let client = Client(transport: transport, middleware: [Self.stamp("a")])

        await #expect(throws: Refused.self) {
            try await client.update { configuration in
                configuration.middleware = [Self.stamp("b")]
                throw Refused()
            }
        }
        _ = try await client.send(Self.request)

        #expect(stamps(transport) == ["a"])
        #expect(client.configuration.middleware.compactMap(\.name) == ["a"])
    }

    @MainActor
    @Test("update can be called from the main actor with values made there")
    func updateFromMainActor() async throws {
        let transport = MockTransport.ok
        let client = Client(baseURL: exampleBaseURL, transport: transport)
        let europe = URL(string: "https://eu.example.test")!

        await client.update { $0.baseURL = europe }
        let _: EmptyResponse = try await client.send(.get("/a"))

        #expect(transport.onlyRequest?.url?.absoluteString == "https://eu.example.test/a")
    }

    @Test("a request in flight keeps the chain it started with", .timeLimit(.minutes(1)))
    func inFlightKeepsChain() async throws {
        let oldTransport = MockTransport(.status(200, body: "old"))
        let newTransport = MockTransport(.status(200, body: "new"))
        let entered = Arrivals()
        let release = Gate()
        let holding = Middleware(name: "holding") { request, next in
            entered.arrive()
            await release.wait()
            return try await next(request)
        }
        let client = Client(transport: oldTransport, middleware: [Self.stamp("old"), holding])
        let task = Task { try await client.send(Self.request) }
        await entered.wait(for: 1)

        await client.update { configuration in
            configuration.middleware = [Self.stamp("new")]
            configuration.transport = newTransport
        }
        release.open()

        let (data, _) = try await task.join()
        #expect(data == Data("old".utf8))
        #expect(stamps(oldTransport) == ["old"])
        #expect(newTransport.callCount == 0)

        let (later, _) = try await client.send(Self.request)
        #expect(later == Data("new".utf8))
        #expect(stamps(newTransport) == ["new"])
    }

    @Test("1,000 concurrent sends are all in flight at once and all complete", .timeLimit(.minutes(1)))
    func manyConcurrentSends() async throws {
        let count = 1_000
        // Holds every request until all of them are in: a client that serialized sends would never get that
        // many into the transport at once, and this test would run into its time limit.
        let holding = HoldingTransport(
            wrapping: MockTransport { request in .status(200, body: request.url?.lastPathComponent ?? "") }
        )
        let client = Client(baseURL: exampleBaseURL, transport: holding, middleware: [Self.stamp("m")])
        try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for index in 0..<count {
                group.addTask {
                    let text: String = try await client.send(.get("/items/\(index)"))
                    return (index, text)
                }
            }
            await holding.waitUntilHolding(count)
            holding.open()
            var completed = 0
            for try await (index, text) in group {
                #expect(text == String(index))
                completed += 1
            }
            #expect(completed == count)
        }
        #expect(holding.peakHeldCount == count)
    }
}
