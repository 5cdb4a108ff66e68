import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The idempotency keys given within one logical call, so that a layer which sends the call again from outside
/// ``Middleware/idempotencyKey(header:methods:generate:)`` sends it with the key it had, not a new one.
///
/// A layer that may restart a non-idempotent request through the layers inside it (the refreshing
/// authenticator after a `401`, a retry whose policy ``RetryPolicy/retriesNonIdempotentRequests``) binds one
/// around all of its attempts. The key layer, inside it, takes the key it gave the same method and URL before, if any. Without
/// it, a `POST` whose first attempt the server performed (its answer lost, or a proxy's `503`) and whose retry met
/// an expired token would go out once more, after the refresh, with a new key: performed twice.
///
/// Keys are remembered by header name, method and URL, so another request sent within the call (a token request
/// from the refresher, say) gets its own. One is made per restartable non-idempotent call; idempotent methods,
/// the hot path, bind nothing.
final class IdempotencyKeyMemory: Sendable {
    private let keys = LockedState<[String: String]>([:])

    /// The memory of the call the current task is in, if a restarting layer bound one.
    @TaskLocal static var current: IdempotencyKeyMemory?

    /// The header an ``Middleware/idempotencyKey(header:methods:generate:)`` layer outside gave (or left) the
    /// request's key in, for the layers inside that must not send a keyed request twice at once (hedging).
    @TaskLocal static var header: String?

    /// Whether `request` carries an idempotency key: in `Idempotency-Key`, or in the header a key layer outside
    /// keys it under.
    static func isKeyed(_ request: URLRequest) -> Bool {
        if RetryPolicy.isIdempotencyKey(request.value(forHTTPHeaderField: "Idempotency-Key")) { return true }
        guard let header else { return false }
        return RetryPolicy.isIdempotencyKey(request.value(forHTTPHeaderField: header))
    }

    /// The key for `request` in `header`: the one given before to the same method and URL, or a new one from
    /// `generate`, remembered.
    func key(for request: URLRequest, header: String, generate: () -> String) -> String {
        let slot = "\(header.lowercased()) \(request.httpMethod ?? "GET") \(request.url?.absoluteString ?? "")"
        if let known = keys.withLock({ $0[slot] }) { return known }
        let fresh = generate()
        return keys.withLock { keys in
            if let known = keys[slot] { return known }
            keys[slot] = fresh
            return fresh
        }
    }

    /// Runs `operation` within a memory for `request`'s call: the current one when a layer further out bound
    /// one, a new one for a non-idempotent request, and none for an idempotent one (nothing to remember).
    static func remembering<Result>(
        for request: URLRequest,
        _ operation: () async throws -> Result
    ) async rethrows -> Result {
        guard current == nil, !HTTPMethod(rawValue: request.httpMethod ?? "GET").isIdempotent else {
            return try await operation()
        }
        return try await $current.withValue(IdempotencyKeyMemory()) { try await operation() }
    }
}
