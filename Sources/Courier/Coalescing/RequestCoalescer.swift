import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Single-flight for identical concurrent `GET` and `HEAD` requests; the state behind
/// ``Middleware/coalescing(_:)``.
///
/// While a request is in flight, an identical one joins it instead of being sent again: one call goes
/// down the chain, and every caller gets the same response or the same error.
///
/// **Which requests are identical** — the coalescing key is:
/// - the method, which must be `GET` or `HEAD` (any other method, and any request with a body, is never
///   coalesced);
/// - the absolute URL, query included, as a string;
/// - **every header field** (names compared case-insensitively, values exactly), except those named in
///   ``ignoredHeaders``. `Authorization`, `Cookie`, `Accept`, `Accept-Language`, `Range` and any custom
///   header such as a tenant id are therefore part of the key: two callers share a response only if they
///   sent the same credentials and asked for the same representation. The default ignored set,
///   ``defaultIgnoredHeaders``, holds per-request tracing and correlation ids, which would otherwise make
///   every request unique.
///
/// **Cancellation** — the shared call runs in a task owned by the coalescer, not by any caller. A cancelled
/// caller stops waiting at once (`CancellationError`); the others keep waiting. The shared call is
/// cancelled only when every caller has gone, and a request that arrives after that starts a new call.
///
/// **Deadlines** — for the same reason, the shared call runs under no caller's ``Deadline``: a caller's
/// timeout ends that caller's wait only, never the call the others are waiting for. A timeout inside the
/// coalescing layer (per attempt) still bounds the shared call itself.
///
/// The state lives under a lock in this object, created once; an uncoalesced request (a `POST`, …) costs a
/// method check. A coalescible request costs building its key and one task for the shared call.
public final class RequestCoalescer: Sendable {
    /// Tracing and correlation headers that are left out of the key by default: `X-Request-ID`,
    /// `X-Correlation-ID`, `traceparent`, `tracestate`, `baggage`, the B3 headers, `X-Amzn-Trace-Id` and
    /// `X-Cloud-Trace-Context`. Lowercased.
    public static let defaultIgnoredHeaders: Set<String> = [
        "x-request-id", "x-correlation-id", "traceparent", "tracestate", "baggage", "b3", "x-b3-traceid",
        "x-b3-spanid", "x-b3-parentspanid", "x-b3-sampled", "x-b3-flags", "x-amzn-trace-id",
        "x-cloud-trace-context",
    ]

    struct Key: Hashable {
        let method: String
        let url: String
        /// The fields not ignored: names lowercased, values exactly as sent; sorted by name.
        let headers: [Header]

        struct Header: Hashable {
            let name: String
            let value: String
        }
    }

    private typealias Waiter = CheckedContinuation<(Data, HTTPURLResponse), any Error>

    private struct Flight {
        let id: Int
        var waiters: [Int: Waiter]
        let task: Task<Void, Never>
    }

    private struct State {
        var flights: [Key: Flight] = [:]
        var nextFlightID = 0
    }

    /// Header names (lowercased) left out of the coalescing key.
    public let ignoredHeaders: Set<String>

    private let state = LockedState(State())
    private let nextWaiterID = Atomic<Int>(0)

    /// Creates a coalescer.
    ///
    /// - Parameter ignoredHeaders: Header names left out of the coalescing key (case-insensitive);
    ///   ``defaultIgnoredHeaders`` by default. Add a header here only if it can never change the response.
    public init(ignoringHeaders ignoredHeaders: Set<String> = RequestCoalescer.defaultIgnoredHeaders) {
        self.ignoredHeaders = Set(ignoredHeaders.map { $0.lowercased() })
    }

    /// How many shared calls are in flight now.
    public var sharedCalls: Int { state.withLock { $0.flights.count } }

    /// How many callers are waiting for a shared call now.
    public var waitingCallers: Int { state.withLock { $0.flights.values.reduce(0) { $0 + $1.waiters.count } } }

    /// Returns the coalescing key of `request`, or `nil` when it must not be coalesced.
    func key(for request: URLRequest) -> Key? {
        let method = request.httpMethod?.uppercased() ?? "GET"
        guard method == "GET" || method == "HEAD" else { return nil }
        guard request.httpBody == nil, request.httpBodyStream == nil, let url = request.url else { return nil }
        var headers: [Key.Header] = []
        for (name, value) in request.allHTTPHeaderFields ?? [:] {
            let name = name.lowercased()
            if !ignoredHeaders.contains(name) { headers.append(Key.Header(name: name, value: value)) }
        }
        headers.sort { $0.name < $1.name }
        return Key(method: method, url: url.absoluteString, headers: headers)
    }

    /// Sends `request` through `next`, or joins an identical call already in flight.
    func send(_ request: URLRequest, next: Next) async throws -> (Data, HTTPURLResponse) {
        guard let key = key(for: request) else { return try await next(request) }
        let waiterID = nextWaiterID.wrappingAdd(1, ordering: .relaxed).newValue
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: Waiter) in
                let joined = state.withLock { state -> Bool in
                    // Checked under the lock: a cancellation either happened before (seen here) or its
                    // handler runs after this section and finds the waiter.
                    if Task.isCancelled { return false }
                    if state.flights[key] != nil {
                        state.flights[key]!.waiters[waiterID] = continuation
                        return true
                    }
                    state.nextFlightID += 1
                    let flightID = state.nextFlightID
                    // Created under the lock, so `finish` (which takes it too) always finds the flight.
                    let task = Task {
                        let result: Result<(Data, HTTPURLResponse), any Error>
                        do {
                            // The call serves every caller, so it runs under none of their deadlines: the
                            // first caller's, inherited as a task-local value, would cut it short for all.
                            result = .success(try await Deadline.$current.withValue(nil) { try await next(request) })
                        } catch {
                            result = .failure(error)
                        }
                        self.finish(key, flightID: flightID, with: result)
                    }
                    state.flights[key] = Flight(id: flightID, waiters: [waiterID: continuation], task: task)
                    return true
                }
                if !joined { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            let (waiter, abandoned) = state.withLock { state -> (Waiter?, Task<Void, Never>?) in
                guard let waiter = state.flights[key]?.waiters.removeValue(forKey: waiterID) else {
                    return (nil, nil)
                }
                guard state.flights[key]!.waiters.isEmpty else { return (waiter, nil) }
                // The last caller has gone: forget the flight (a new request starts afresh) and cancel it.
                return (waiter, state.flights.removeValue(forKey: key)!.task)
            }
            abandoned?.cancel()
            waiter?.resume(throwing: CancellationError())
        }
    }

    private func finish(_ key: Key, flightID: Int, with result: Result<(Data, HTTPURLResponse), any Error>) {
        let waiters = state.withLock { state -> [Waiter] in
            // The flight is gone when every caller left; a newer flight under the same key is not ours.
            guard let flight = state.flights[key], flight.id == flightID else { return [] }
            state.flights[key] = nil
            return Array(flight.waiters.values)
        }
        for waiter in waiters { waiter.resume(with: result) }
    }
}
