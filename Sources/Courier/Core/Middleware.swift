public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// One cross-cutting concern in front of a ``Transport``: authentication, retry, timeout, logging, ….
///
/// A middleware receives the request and a ``Next`` that continues down the chain. It may change the
/// request, call `next` zero, one or several times (retry, refresh-and-restart), transform the response,
/// or throw.
///
/// ```swift
/// let userAgent = Middleware(name: "user-agent") { request, next in
///     var request = request
///     request.setValue("courier", forHTTPHeaderField: "User-Agent")
///     return try await next(request)
/// }
/// ```
///
/// A ``Client`` composes its middleware once, when its configuration changes; sending a request walks an
/// indexed chain and never builds closures per request. The middleware listed **first** is the
/// **outermost**: it sees the request first and the response last.
public struct Middleware: Sendable {
    /// The closure a middleware is made of.
    ///
    /// It is `nonisolated(nonsending)`: it runs on the executor of whoever calls it — for a request sent
    /// with `Client.send`, the global concurrent executor, where `send` runs — and so does `next`. Calling
    /// the next layer then never switches executors on entry, which halves what a layer costs (see
    /// Benchmarks/RESULTS.md). Any `@Sendable` async closure or function of this shape converts to it.
    public typealias Handler =
        nonisolated(nonsending) @Sendable (URLRequest, Next) async throws -> (Data, HTTPURLResponse)

    /// A short name used in errors and logs (for example `"retry"`), or `nil`.
    public let name: String?

    /// The closure that handles a request.
    public let handler: Handler

    /// Whether the middleware waits for nothing but `next` and waits bounded by ``Deadline/current`` (a
    /// retry's backoff): a timeout above it may then leave its deadline to a transport that enforces it (see
    /// `DeadlineEnforcingTransport`). Set by the built-in middleware whose code says so; a middleware made
    /// with the public initializer is assumed to wait on anything.
    let waitsOnlyWithinDeadline: Bool

    /// Creates a middleware from a closure.
    ///
    /// - Parameters:
    ///   - name: A short name used in errors and logs.
    ///   - handler: The closure; call `next` to continue down the chain.
    public init(name: String? = nil, _ handler: @escaping Handler) {
        self.init(name: name, waitsOnlyWithinDeadline: false, handler)
    }

    init(name: String?, waitsOnlyWithinDeadline: Bool, _ handler: @escaping Handler) {
        self.name = name
        self.handler = handler
        self.waitsOnlyWithinDeadline = waitsOnlyWithinDeadline
    }

    /// Returns a copy of this middleware with another name.
    public func named(_ name: String) -> Middleware {
        Middleware(name: name, waitsOnlyWithinDeadline: waitsOnlyWithinDeadline, handler)
    }
}
