import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Idempotency keys")
struct IdempotencyKeyTests {
    private func keys(of transport: MockTransport) -> [String?] {
        transport.requests.map { $0.value(forHTTPHeaderField: "Idempotency-Key") }
    }

    @Test("POST and PATCH get a key; GET, PUT and DELETE do not", arguments: ["POST", "PATCH", "GET", "PUT", "DELETE"])
    func methods(method: String) async throws {
        let transport = MockTransport.ok
        let client = Client(transport: transport, middleware: [.idempotencyKey()])
        _ = try await client.send(RetryFixtures.request(method))
        let key = try #require(keys(of: transport).first)
        #expect((key != nil) == (method == "POST" || method == "PATCH"))
    }

    @Test("each call gets its own key")
    func onePerCall() async throws {
        let transport = MockTransport.ok
        let client = Client(transport: transport, middleware: [.idempotencyKey()])
        for _ in 0..<3 { _ = try await client.send(RetryFixtures.request("POST")) }
        let sent = keys(of: transport).compactMap { $0 }
        #expect(sent.count == 3)
        #expect(Set(sent).count == 3)
    }

    @Test("a request that has a key keeps it")
    func keepsOwnKey() async throws {
        let transport = MockTransport.ok
        let client = Client(transport: transport, middleware: [.idempotencyKey()])
        _ = try await client.send(RetryFixtures.request("POST", headers: ["Idempotency-Key": "order-17"]))
        #expect(keys(of: transport) == ["order-17"])
    }

    @Test(
        "an empty or blank key is no key, nor an empty quoted one: the layer replaces it with a new one",
        arguments: ["", "  ", "\t", "\"\"", " \" \" "]
    )
    func replacesBlankKey(blank: String) async throws {
        let transport = MockTransport.ok
        let client = Client(transport: transport, middleware: [.idempotencyKey(generate: { "generated-key" })])
        _ = try await client.send(RetryFixtures.request("POST", headers: ["Idempotency-Key": blank]))
        #expect(keys(of: transport) == ["generated-key"])
    }

    @Test(
        "a POST whose Idempotency-Key is empty or blank is not retried: the server cannot tell the copies apart",
        arguments: ["", " ", "\t \t", "\"\""]
    )
    func blankKeyIsNotRetried(blank: String) async throws {
        let transport = MockTransport(.status(503), then: .ok)
        let client = Client(transport: transport, middleware: [.retry(RetryFixtures.policy())])
        let (_, response) = try await client.send(RetryFixtures.request("POST", headers: ["Idempotency-Key": blank]))
        #expect(response.statusCode == 503)
        #expect(transport.callCount == 1)
        // A real key is: the same stack retries it.
        let keyed = MockTransport(.status(503), then: .ok)
        let retried = Client(transport: keyed, middleware: [.retry(RetryFixtures.policy())])
        _ = try await retried.send(RetryFixtures.request("POST", headers: ["Idempotency-Key": "order-17"]))
        #expect(keyed.callCount == 2)
    }

    @Test("the header name, the methods and the key generator can be chosen")
    func custom() async throws {
        let transport = MockTransport.ok
        let client = Client(
            transport: transport,
            middleware: [.idempotencyKey(header: "X-Request-Id", methods: [.put], generate: { "fixed" })]
        )
        _ = try await client.send(RetryFixtures.request("PUT"))
        _ = try await client.send(RetryFixtures.request("POST"))
        #expect(transport.requests.map { $0.value(forHTTPHeaderField: "X-Request-Id") } == ["fixed", nil])
    }

    @Test("placed inside the retry, the key comes too late: the POST is not retried")
    func insideRetry() async throws {
        let transport = MockTransport(.status(503), then: .ok)
        let client = Client(transport: transport, middleware: [.retry(RetryFixtures.policy()), .idempotencyKey()])
        let (_, response) = try await client.send(RetryFixtures.request("POST"))
        #expect(response.statusCode == 503)
        #expect(transport.callCount == 1)
    }
}

@Suite("Idempotency keys across a refresh")
struct IdempotencyKeyRefreshTests {
    @Test(
        "authenticating outside idempotencyKey outside retry: a POST restarted after 503 then 401 keeps its key",
        .timeLimit(.minutes(1))
    )
    func keyKeptAcrossRefresh() async throws {
        // The first attempt may have been performed (its 503 came from a proxy, or its answer was lost); the retry
        // meets an expired token; the refreshed restart must carry the same key, or the server performs it twice.
        let transport = MockTransport(.status(503), then: .status(401), .ok)
        let refresher = TokenRefresher(token: .init("v1")) { _ in .init("v2") }
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: refresher), .idempotencyKey(), .retry(RetryFixtures.policy())]
        )
        let (_, response) = try await client.send(RetryFixtures.request("POST"))
        #expect(response.statusCode == 200)
        let keys = transport.requests.map { $0.value(forHTTPHeaderField: "Idempotency-Key") }
        #expect(keys.count == 3)
        #expect(keys.allSatisfy { $0 != nil })
        #expect(Set(keys).count == 1)
        #expect(
            transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") } == [
                "Bearer v1", "Bearer v1", "Bearer v2",
            ]
        )
    }

    @Test("two calls through the same stack still get two keys", .timeLimit(.minutes(1)))
    func twoCallsTwoKeys() async throws {
        let transport = MockTransport(.status(401), then: .ok)
        let refresher = TokenRefresher(token: .init("v1")) { _ in .init("v2") }
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: refresher), .idempotencyKey()]
        )
        _ = try await client.send(RetryFixtures.request("POST"))
        _ = try await client.send(RetryFixtures.request("POST"))
        let keys = transport.requests.map { $0.value(forHTTPHeaderField: "Idempotency-Key") }
        try #require(keys.count == 3)
        #expect(keys[0] == keys[1])
        #expect(keys[2] != keys[0])
    }
}

@Suite("Idempotency keys across retries that resend non-idempotent requests")
struct IdempotencyKeyRetryTests {
    @Test(
        "a retry that resends POSTs (retriesNonIdempotentRequests) outside idempotencyKey sends one key on every attempt",
        .timeLimit(.minutes(1))
    )
    func oneKeyPerCall() async throws {
        let transport = MockTransport(.status(503), then: .status(503), .ok)
        let policy = RetryPolicy(
            maximumAttempts: 3,
            backoff: .immediate,
            retriesNonIdempotentRequests: true,
            budget: nil
        )
        let client = Client(transport: transport, middleware: [.retry(policy), .idempotencyKey()])
        let (_, response) = try await client.send(RetryFixtures.request("POST"))
        #expect(response.statusCode == 200)
        let keys = transport.requests.map { $0.value(forHTTPHeaderField: "Idempotency-Key") }
        #expect(keys.count == 3)
        #expect(keys.allSatisfy { $0 != nil })
        #expect(Set(keys).count == 1)
    }
}
