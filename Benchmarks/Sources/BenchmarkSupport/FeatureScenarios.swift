import Courier
import CourierTesting
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// In-memory scenarios for Courier's features beyond the chain: each does exactly the named work once per
/// call, so that `InstructionCounts`' difference of two call counts is the cost of one (the budgets of
/// `Benchmarks/check-budgets` are per call of these).
public enum FeatureScenarios {
    /// The scenarios, by name.
    public static func all() -> [(name: String, calls: Calls)] {
        [
            ("cacheHit", cacheHits()),
            ("rateLimited", rateLimitedCalls()),
            ("streamedChunk", streamedChunks()),
            ("sseEvent", serverSentEvents()),
            ("redactLogLine", redactedLogLines()),
            ("refreshStorm", refreshStorms()),
        ]
    }

    /// `Client.send` through `.caching()` alone, answered by a fresh stored response: the first call of a
    /// process stores it (a miss, the same in both counts, so it cancels out), every later one is a hit.
    static func cacheHits() -> Calls {
        let transport = InMemoryTransport(
            headerFields: ["Content-Type": "application/json", "Cache-Control": "max-age=3600"]
        )
        return sending(through: Client(transport: transport, middleware: [.caching()]))
    }

    /// `Client.send` through `.rateLimiting()` alone, over a server that sends no rate-limit fields.
    static func rateLimitedCalls() -> Calls {
        sending(through: Client(transport: InMemoryTransport(), middleware: [.rateLimiting()]))
    }

    /// One `Client.stream` call whose body is `count` chunks of 1 KiB, read to the end: per call, one chunk
    /// written into the body by the transport's task and read by the caller.
    static func streamedChunks() -> Calls {
        let chunk = Data(repeating: 0x61, count: 1024)
        return { count in
            let client = Client(transport: ChunkStreamingTransport(chunk: chunk, count: count))
            let (body, _) = try await client.stream(Fixtures.request)
            var read = 0
            for try await chunk in body {
                sink(chunk)
                read += 1
            }
            guard read == count else { throw ScenarioFailure("\(read) of \(count) chunks read") }
        }
    }

    /// `count` events, one per chunk, read with `ServerSentEventSequence`.
    static func serverSentEvents() -> Calls {
        let chunk = Data("event: update\nid: 42\ndata: {\"id\":42,\"name\":\"Ada\"}\n\n".utf8)
        return { count in
            var read = 0
            for try await event in ServerSentEventSequence(RepeatedChunks(chunk: chunk, count: count)) {
                sink(event)
                read += 1
            }
            guard read == count else { throw ScenarioFailure("\(read) of \(count) events read") }
        }
    }

    /// A log line as a failed call prints it, with a query token and an `Authorization` field to remove.
    static let logLine =
        "GET http://127.0.0.1:8080/users/42?page=2&access_token=0123456789abcdef failed after 12 ms: "
        + "401 Unauthorized; request Accept: application/json, Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.c2ln; "
        + "response Content-Type: application/json, X-Request-ID: f058ebd6"

    /// `Redaction.redactedText` of ``logLine``.
    static func redactedLogLines() -> Calls {
        let line = logLine
        return { count in
            for _ in 0..<count {
                sink(Redaction.redactedText(line))
            }
        }
    }

    /// A refresh storm of `count` requests: all sent at once with an expired token through
    /// `counting → authenticating(with: TokenRefresher)`, all rejected, all waiting on the one refresh, all
    /// sent again (the benchmark "Refresh storm", at any size). Fails unless there was one refresh and every
    /// request succeeded.
    static func refreshStorms() -> Calls {
        { count in
            let rejected = Arrivals()
            let refresher = TokenRefresher(token: .init("expired")) { _ in
                await rejected.wait(for: count)
                return .init("fresh")
            }
            let counter = RequestCounter()
            let client = Client(
                baseURL: Fixtures.url,
                transport: TokenCheckingTransport(accepting: "Bearer fresh") { rejected.arrive() },
                middleware: [.counting(counter), .authenticating(with: refresher)]
            )
            let request = Fixtures.request
            let succeeded = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<count {
                    group.addTask { (try? await client.send(request))?.1.statusCode == 200 }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            guard refresher.refreshCount == 1, succeeded == count, counter.snapshot.inFlight == 0 else {
                throw ScenarioFailure("\(refresher.refreshCount) refreshes, \(succeeded) of \(count) succeeded")
            }
        }
    }
}

/// A scenario that did not do what it is named for: its count would be of something else.
struct ScenarioFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}

/// The same chunk a given number of times, without suspending.
struct RepeatedChunks: AsyncSequence, Sendable {
    typealias Element = Data
    typealias Failure = Never

    let chunk: Data
    let count: Int

    func makeAsyncIterator() -> Iterator {
        Iterator(chunk: chunk, left: count)
    }

    struct Iterator: AsyncIteratorProtocol {
        let chunk: Data
        var left: Int

        mutating func next() async -> Data? {
            guard left > 0 else { return nil }
            left -= 1
            return chunk
        }
    }
}

/// A transport whose streamed body is one chunk repeated, written by `StreamedBody`'s own task with its
/// backpressure, as a transport of the caller's would stream.
struct ChunkStreamingTransport: Transport {
    let chunk: Data
    let count: Int
    let head = HTTPURLResponse(url: Fixtures.url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: nil)!

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        throw ScenarioFailure("streams only")
    }

    func stream(_ request: URLRequest) async throws -> (StreamedBody, HTTPURLResponse) {
        (StreamedBody(RepeatedChunks(chunk: chunk, count: count)), head)
    }
}
