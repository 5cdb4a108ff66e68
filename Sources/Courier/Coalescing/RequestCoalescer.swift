import Foundation

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
///   every request unique. A response that Varies on one of the ignored fields, or on anything (`Vary: *`),
///   answers only the request it was sent for: each caller that joined then sends its own request.
///
/// **Cancellation** — the shared call runs in a task owned by the coalescer, not by any caller. A cancelled
/// caller stops waiting at once (`CancellationError`); the others keep waiting. The shared call is
/// cancelled only when every caller has gone, and a request that arrives after that starts a new call.
///
/// **Deadlines** — for the same reason, the shared call runs under no caller's ``Deadline``: a caller's
/// timeout ends that caller's wait only, never the call the others are waiting for. A timeout inside the
/// coalescing layer (per attempt) still bounds the shared call itself.
///
/// The state lives under a lock in this object, created once; its transitions are
/// `RequestCoalescerStateMachine`'s. An uncoalesced request (a `POST`, …) costs a method check. A coalescible
/// request costs building its key, three short critical sections and one task for the shared call.
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
        /// The caching layer's generation of the last invalidation of the resource while a fetch of it was in flight
        /// (``InvalidationLog/lastInvalidation(of:)``), 0 when none: a call that began after an unsafe request
        /// changed the resource never joins a fetch that began before, whose response may predate the change.
        var invalidation: UInt64 = 0

        /// Compared and hashed by bytes (``ExactString``): values canonically equivalent but different in bytes
        /// (two tenants' identifiers, say) are different requests to the server.
        struct Header: Hashable {
            let name: String
            let value: String

            static func == (lhs: Self, rhs: Self) -> Bool {
                lhs.name.hasSameBytes(as: rhs.name) && lhs.value.hasSameBytes(as: rhs.value)
            }

            func hash(into hasher: inout Hasher) {
                hasher.combine(utf8Of: name)
                hasher.combine(utf8Of: value)
            }
        }

        static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.method.hasSameBytes(as: rhs.method) && lhs.url.hasSameBytes(as: rhs.url) && lhs.headers == rhs.headers
                && lhs.invalidation == rhs.invalidation
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(utf8Of: method)
            hasher.combine(utf8Of: url)
            hasher.combine(headers)
            hasher.combine(invalidation)
        }
    }

    private typealias Waiter = CheckedContinuation<(Data, HTTPURLResponse), any Error>
    private typealias Machine = RequestCoalescerStateMachine<Key, Waiter, Task<Void, Never>>

    /// Header names (lowercased) left out of the coalescing key, but for any registered as a credential header
    /// since (``CredentialHeaders/register(_:)``), which stays in it.
    public let ignoredHeaders: Set<String>

    private let state = LockedState(Machine())

    /// - Parameter ignoredHeaders: Header names left out of the coalescing key (case-insensitive);
    ///   ``defaultIgnoredHeaders`` by default. Add a header here only if it can never change the response. A
    ///   credential header (``CredentialHeaders/contains(_:)``: `Authorization`, `Cookie`, `X-API-Key`, a name
    ///   registered before or after this call, …) is never left out, even when named here: callers with different
    ///   credentials never share a response.
    public init(ignoringHeaders ignoredHeaders: Set<String> = RequestCoalescer.defaultIgnoredHeaders) {
        self.ignoredHeaders = Set(
            ignoredHeaders.lazy.map { $0.lowercased() }.filter { !CredentialHeaders.contains($0) }
        )
    }

    /// How many shared calls are in flight now.
    public var sharedCalls: Int { state.withLock { $0.flightCount } }

    /// How many callers are waiting for a shared call now.
    public var waitingCallers: Int { state.withLock { $0.waiterCount } }

    /// Returns the coalescing key of `request`, or `nil` when it must not be coalesced.
    func key(for request: URLRequest) -> Key? {
        let method = request.httpMethod?.uppercased() ?? "GET"
        guard method == "GET" || method == "HEAD" else { return nil }
        guard request.httpBody == nil, request.httpBodyStream == nil, let url = request.url else { return nil }
        var headers: [Key.Header] = []
        for (name, value) in request.allHTTPHeaderFields ?? [:] {
            let name = name.asciiLowercased
            // A name registered as a credential after this coalescer was made is one now (asked only of the
            // ignored names, which are few).
            if !ignoredHeaders.contains(name) || CredentialHeaders.contains(name) {
                headers.append(Key.Header(name: name, value: value))
            }
        }
        headers.sort { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        return Key(method: method, url: url.absoluteString, headers: headers)
    }

    static let misplacedMessage =
        "a middleware inside the coalescing middleware (.authenticating, .headers with a credential) attached a "
        + "credential the coalescing key cannot see; list .coalescing after it"

    /// Sends `request` through `next`, or joins an identical call already in flight.
    func send(_ request: URLRequest, next: Next) async throws -> (Data, HTTPURLResponse) {
        guard let key = key(for: request) else { return try await next(request) }
        let shared = try await share(key) {
            // An authenticating layer inside attaches a credential the key never saw: the response would answer
            // every caller with the first one's credential (another tenant's, when the token depends on the caller).
            try await CredentialWitness.guarding(
                misplaced: CourierError(.invalidRequest, message: Self.misplacedMessage, request: request)
            ) { try await next(request) }
        }
        // A caller that joined sent the same fields but those the key leaves out (tracing ids): a response that
        // Varies on one of them, or on anything (`*`), answers only the request it was sent for (RFC 9110 §12.5.5).
        // This caller then sends its own.
        if shared.ranHere || !varies(shared.response.1) { return shared.response }
        return try await next(request)
    }

    /// Whether `response` Varies on a field the key leaves out, or on anything (`Vary: *`): then it answers
    /// only the request it was sent for, not the callers that joined it.
    func varies(_ response: HTTPURLResponse) -> Bool {
        guard let vary = response.value(forHTTPHeaderField: "Vary") else { return false }
        return FieldText.split(vary[...], on: UInt8(ascii: ",")).contains { name in
            let name = String(FieldText.trimmed(name)).asciiLowercased
            return name == "*" || ignoredHeaders.contains(name)
        }
    }

    /// Runs `operation` for `key`, or joins the run already in flight for it (the caching layer shares its
    /// misses this way). `ranHere` says which: a caller that joined got a response to another's request.
    func share(
        _ key: Key,
        _ operation: @escaping @Sendable () async throws -> (Data, HTTPURLResponse)
    ) async throws -> (response: (Data, HTTPURLResponse), ranHere: Bool) {
        let waiterID = state.withLock { $0.makeWaiterID() }
        var ranHere = false
        let response = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: Waiter) in
                // Task.isCancelled is read under the lock: a cancellation either happened before (seen here) or
                // its handler runs after this section and finds the waiter.
                let action = state.withLock {
                    $0.join(key, waiter: continuation, id: waiterID, isCancelled: Task.isCancelled)
                }
                switch action {
                case .joined:
                    break
                case .cancelled:
                    continuation.resume(throwing: CancellationError())
                case .start(let flightID):
                    ranHere = true
                    let call = SharedWork.start {
                        let result: Result<(Data, HTTPURLResponse), any Error>
                        do {
                            // The call serves every caller, so it runs under none of their deadlines: the
                            // first caller's, inherited as a task-local value, would cut it short for all.
                            result = .success(try await Deadline.$current.withValue(nil) { try await operation() })
                        } catch {
                            result = .failure(error)
                        }
                        self.finish(key, flightID: flightID, with: result)
                    }
                    if !state.withLock({ $0.attach(call, to: key, flightID: flightID) }) { call.cancel() }
                }
            }
        } onCancel: {
            switch state.withLock({ $0.leave(key, waiter: waiterID) }) {
            case .none:
                break
            case .resume(let waiter):
                waiter.resume(throwing: CancellationError())
            case .resumeAndCancel(let waiter, let call):
                call?.cancel()
                waiter.resume(throwing: CancellationError())
            }
        }
        return (response, ranHere)
    }

    private func finish(_ key: Key, flightID: Int, with result: Result<(Data, HTTPURLResponse), any Error>) {
        let waiters = state.withLock { $0.finish(key, flightID: flightID) }
        for waiter in waiters { waiter.resume(with: result) }
    }
}
