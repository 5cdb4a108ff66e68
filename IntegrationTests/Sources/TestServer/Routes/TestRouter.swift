import Hummingbird

/// Builds the router of one test server. The routes live in `TestRouter+*.swift`, one file per
/// area; ``TestServers`` lists them all.
enum TestRouter {
    /// Every method `/echo` and `/hit/:key` answer.
    static let allMethods: [HTTPRequest.Method] = [.get, .head, .post, .put, .patch, .delete, .options]

    /// The most a handler that waits (`/delay`, `/wait`, a slow token) may be asked to wait.
    static let maximumWaitMilliseconds = 5000

    /// The largest body `/echo` reads.
    static let maximumEchoBody = 16 * 1024 * 1024

    static func make(state: ServerState) -> Router<BasicRequestContext> {
        let router = Router()
        // Reading counters must not count: these routes go before the counting middleware.
        self.addCounterRoutes(to: router, state: state)
        router.add(middleware: CountingMiddleware(state: state))
        self.addContentRoutes(to: router, state: state)
        self.addFaultRoutes(to: router, state: state)
        self.addAuthRoutes(to: router, state: state)
        self.addRedirectRoutes(to: router, state: state)
        self.addCachingRoutes(to: router, state: CachingState())
        self.addRateLimitRoutes(to: router)
        self.addCompressionRoutes(to: router)
        self.addOpenAPIRoutes(to: router, state: state)
        self.addUploadRoutes(to: router)
        self.addStreamingRoutes(to: router, state: state)
        self.addDownloadRoutes(to: router, state: state)
        return router
    }

    /// Reads a millisecond count from the query, refusing values above ``maximumWaitMilliseconds``.
    static func milliseconds(_ text: String?, default defaultValue: Int = 0) -> Int? {
        guard let text else { return defaultValue }
        guard let value = Int(text), value >= 0, value <= Self.maximumWaitMilliseconds else { return nil }
        return value
    }
}
