public import Foundation

extension Client {
    /// Everything a client is set up with, as one value: pass it to ``Client/init(configuration:)``, read it
    /// back with ``Client/configuration``, change it with ``Client/update(_:)``.
    ///
    /// ```swift
    /// await client.update { configuration in
    ///     configuration.middleware.append(.logging())                    // nearest the transport
    ///     configuration.middleware.removeAll { $0.name == "timeout" }    // by the name a middleware has
    ///     configuration.baseURL = URL(string: "https://eu.example.com/v1")!
    /// }
    /// ```
    public struct Configuration: Sendable {
        /// The URL that typed requests' paths are relative to.
        public var baseURL: URL?
        /// What sends requests, at the end of the chain.
        public var transport: any Transport
        /// The middleware, outermost first: the first one sees the request first and the response (or error)
        /// last, so what is appended runs nearest the transport.
        public var middleware: [Middleware]
        /// The encoder for JSON request bodies that bring none of their own.
        public var encoder: JSONEncoder
        /// The decoder for JSON responses.
        public var decoder: JSONDecoder
        /// How to decode API error bodies on unacceptable statuses, for requests that declare none.
        public var errorBody: ErrorBodyDecoder?
        /// Whether requests sent while this is on can be cancelled by ``Client/shutdown(gracePeriod:clock:)``
        /// when its grace period ends; off by default.
        ///
        /// A request runs in its caller's task, and Courier will not cancel a caller's task (that would cancel
        /// whatever the caller does next). So a cancellable request runs in a task of its own, which costs a
        /// few microseconds per request. Turn it on for servers that need a bounded shutdown:
        ///
        /// ```swift
        /// await client.update { $0.isCancellableOnShutdown = true }
        /// // … on SIGTERM:
        /// await client.shutdown(gracePeriod: .seconds(10))
        /// ```
        public var isCancellableOnShutdown: Bool

        /// Creates a configuration; every part has the default a bare ``Client/init(baseURL:transport:middleware:encoder:decoder:errorBody:)`` uses.
        public init(
            baseURL: URL? = nil,
            transport: any Transport = URLSessionTransport(),
            middleware: [Middleware] = [],
            encoder: JSONEncoder = JSONEncoder(),
            decoder: JSONDecoder = JSONDecoder(),
            errorBody: ErrorBodyDecoder? = nil,
            isCancellableOnShutdown: Bool = false
        ) {
            self.baseURL = baseURL
            self.transport = transport
            self.middleware = middleware
            self.encoder = encoder
            self.decoder = decoder
            self.errorBody = errorBody
            self.isCancellableOnShutdown = isCancellableOnShutdown
        }
    }
}
