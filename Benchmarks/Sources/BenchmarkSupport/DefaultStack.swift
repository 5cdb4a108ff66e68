public import Courier

/// The documented default stack, outermost first:
/// counting → logging → timeout (whole call) → retry → authentication → timeout (per attempt) →
/// status validation.
public enum DefaultStack {
    /// The bearer token the stack's authentication layer sends.
    public static let token = "bench-token-0123456789"

    /// The stack as the README recommends it. Logging goes to a sink that drops records (the layer still
    /// builds a redacted record per request), so what is measured is Courier, not a terminal.
    ///
    /// - Parameter counter: What the outermost layer counts into; a fresh counter by default.
    /// - Returns: The middleware, outermost first.
    public static func middleware(counter: RequestCounter = RequestCounter()) -> [Middleware] {
        var middleware = recommended(counter: counter)
        middleware.insert(logging(), at: 1)
        return middleware
    }

    /// The stack issue 17 measures end to end: counting → timeout 10 s → retry → authentication with a static
    /// token → timeout 2 s → status validation (``middleware(counter:)`` without its logging layer).
    ///
    /// - Parameter counter: What the outermost layer counts into; a fresh counter by default.
    /// - Returns: The middleware, outermost first.
    public static func recommended(counter: RequestCounter = RequestCounter()) -> [Middleware] {
        [
            .counting(counter),
            .timeout(.seconds(10)),
            .retry(.default),
            .authenticating(token: token),
            .timeout(.seconds(2)),
            .validatingStatus(),
        ]
    }

    /// The stack's logging layer: it builds (and redacts) a record per request at the default level (`info`)
    /// for a sink that drops them, so nothing is written anywhere.
    ///
    /// - Returns: The middleware.
    public static func logging() -> Middleware {
        .logging(to: LogSink(minimumLevel: .info) { _ in })
    }
}

/// The ways Courier is configured in the end-to-end benchmarks: each is one `Client` per transport in
/// ``LoopbackClients``.
public enum CourierConfiguration: Int, CaseIterable, Sendable {
    /// No middleware: `Client.send` and the transport.
    case none
    /// ``DefaultStack/middleware(counter:)``, logging included (the in-process loopback benchmarks).
    case defaultStack
    /// ``DefaultStack/middleware(counter:)`` without its two timeouts.
    case defaultStackWithoutTimeouts
    /// ``DefaultStack/recommended(counter:)``, the stack of the benchmarks against nginx.
    case recommended
    /// ``DefaultStack/recommended(counter:)`` without its two timeouts.
    case recommendedWithoutTimeouts
    /// ``DefaultStack/middleware(counter:)`` with a pass-through middleware of the caller's at the bottom: a layer
    /// Courier cannot vouch for, so both timeouts run the chain below them in a child task, as they all did before
    /// transports enforced deadlines themselves. The side-by-side measure of that change.
    case defaultStackWithChildTasks
    /// ``DefaultStack/recommended(counter:)`` with the same pass-through middleware at the bottom.
    case recommendedWithChildTasks
    /// `.counting` alone.
    case counting
    /// `.timeout(.seconds(10))` alone.
    case timeout
    /// `.retry(.default)` alone.
    case retry
    /// `.authenticating(token:)` alone.
    case authentication
    /// `.validatingStatus()` alone.
    case statusValidation

    /// How benchmark names spell the configuration.
    public var label: String {
        switch self {
        case .none: "no middleware"
        case .defaultStack: "default stack"
        case .defaultStackWithoutTimeouts: "default stack without its timeouts"
        case .recommended: "recommended stack"
        case .recommendedWithoutTimeouts: "recommended stack without its timeouts"
        case .defaultStackWithChildTasks: "default stack, timeouts in child tasks"
        case .recommendedWithChildTasks: "recommended stack, timeouts in child tasks"
        case .counting: "counting alone"
        case .timeout: "timeout alone"
        case .retry: "retry alone"
        case .authentication: "authentication alone"
        case .statusValidation: "status validation alone"
        }
    }

    /// Whether a layer sets `Authorization`: such a client is handed the request without it, so that every
    /// client puts the same header fields on the wire.
    public var authenticates: Bool {
        switch self {
        case .none, .counting, .timeout, .retry, .statusValidation: false
        case .defaultStack, .defaultStackWithoutTimeouts, .recommended, .recommendedWithoutTimeouts,
            .defaultStackWithChildTasks, .recommendedWithChildTasks, .authentication:
            true
        }
    }

    /// The middleware, outermost first.
    public func middleware() -> [Middleware] {
        switch self {
        case .none: []
        case .defaultStack: DefaultStack.middleware()
        case .defaultStackWithoutTimeouts: DefaultStack.middleware().filter { $0.name != "timeout" }
        case .recommended: DefaultStack.recommended()
        case .recommendedWithoutTimeouts: DefaultStack.recommended().filter { $0.name != "timeout" }
        case .defaultStackWithChildTasks: DefaultStack.middleware() + [Self.passThrough]
        case .recommendedWithChildTasks: DefaultStack.recommended() + [Self.passThrough]
        case .counting: [.counting(RequestCounter())]
        case .timeout: [.timeout(.seconds(10))]
        case .retry: [.retry(.default)]
        case .authentication: [.authenticating(token: DefaultStack.token)]
        case .statusValidation: [.validatingStatus()]
        }
    }

    /// A middleware of the caller's that only calls `next`.
    private static let passThrough = Middleware(name: "passThrough") { request, next in try await next(request) }
}
