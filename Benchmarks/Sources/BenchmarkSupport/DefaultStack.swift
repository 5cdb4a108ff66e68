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
        [
            .counting(counter),
            logging(),
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
