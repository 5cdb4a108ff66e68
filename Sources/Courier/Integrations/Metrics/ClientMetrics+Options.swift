#if Metrics
extension ClientMetrics {
    /// What ``ClientMetrics`` records.
    ///
    /// ```swift
    /// var options = ClientMetrics.Options()
    /// options.maximumServerAddresses = 8     // a client that talks to a handful of hosts
    /// let metrics = ClientMetrics(options: options)
    /// ```
    public struct Options: Sendable, Hashable {
        /// Whether metrics carry the `server.address` dimension (the request's host). On by default.
        public var includesServerAddress: Bool
        /// How many distinct hosts get a `server.address` of their own; requests to further hosts are
        /// reported as `_OTHER`, so that a client calling arbitrary hosts cannot grow the number of series
        /// without bound. 32 by default.
        public var maximumServerAddresses: Int

        /// Creates options.
        ///
        /// - Parameters:
        ///   - includesServerAddress: Whether metrics carry the `server.address` dimension.
        ///   - maximumServerAddresses: How many distinct hosts get a `server.address` of their own.
        public init(includesServerAddress: Bool = true, maximumServerAddresses: Int = 32) {
            self.includesServerAddress = includesServerAddress
            self.maximumServerAddresses = maximumServerAddresses
        }
    }
}
#endif
