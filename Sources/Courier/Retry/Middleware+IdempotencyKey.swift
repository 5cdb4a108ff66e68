public import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Middleware {
    /// Gives every `POST` and `PATCH` call an `Idempotency-Key` header, so the server can recognise a
    /// retried request and ``Middleware/retry(_:clock:)`` may resend it.
    ///
    /// ```swift
    /// let client = Client(
    ///     baseURL: URL(string: "https://payments.example.com")!,
    ///     middleware: [
    ///         .idempotencyKey(),   // outside the retry: one key per call
    ///         .retry(.default),    // resends the same request, key included
    ///     ]
    /// )
    /// ```
    ///
    /// **Place it outside (before) the retry.** It runs once per call, and the retry resends the very same
    /// request, so every attempt carries the same key — which is the point: the server performs the
    /// operation once and answers the repeats from its record. Placed inside the retry, it would run after
    /// the retry decided the request is not safe to repeat, so `POST`s would simply not be retried.
    ///
    /// A call that a layer listed outside this one sends again through it keeps its key: the refreshing
    /// ``Middleware/authenticating(with:scheme:failure:origins:)`` restarting a `POST` after a `401`, or a retry
    /// whose policy ``RetryPolicy/retriesNonIdempotentRequests``, sends the same key on every attempt, so the
    /// server can still tell that they are one operation.
    ///
    /// A request that already has the header keeps its own key; an empty or blank value is no key, and is
    /// replaced. The key is a random UUID, sent as it is
    /// (`Idempotency-Key: 0E5D5B8B-…`), as most APIs expect; the IETF draft form is a quoted string, which
    /// `generate: { "\"\(UUID().uuidString)\"" }` gives. The server must support idempotency keys for the
    /// guarantee to hold.
    ///
    /// - Parameters:
    ///   - header: The header name; `Idempotency-Key` by default. Use the same name as
    ///     ``RetryPolicy/idempotencyKeyHeader``.
    ///   - methods: The methods that get a key; `POST` and `PATCH` by default.
    ///   - generate: Makes a new key; a random UUID by default.
    /// - Returns: The middleware, named `"idempotency-key"`.
    public static func idempotencyKey(
        header: String = "Idempotency-Key",
        methods: Set<HTTPMethod> = [.post, .patch],
        generate: @escaping @Sendable () -> String = { UUID().uuidString }
    ) -> Middleware {
        Middleware(name: "idempotency-key", waitsOnlyWithinDeadline: true) { request, next in
            guard methods.contains(HTTPMethod(rawValue: request.httpMethod ?? "GET")) else {
                return try await next(request)
            }
            // The layers inside learn which header carries the key (hedging sends no second copy of a keyed request).
            guard !RetryPolicy.isIdempotencyKey(request.value(forHTTPHeaderField: header)) else {
                return try await IdempotencyKeyMemory.$header.withValue(header) { try await next(request) }
            }
            var request = request
            // Within a call that a layer further out may send again (a refresh after a 401), the key it had.
            let key = IdempotencyKeyMemory.current?.key(for: request, header: header, generate: generate) ?? generate()
            request.setValue(key, forHTTPHeaderField: header)
            return try await IdempotencyKeyMemory.$header.withValue(header) { try await next(request) }
        }
    }
}
