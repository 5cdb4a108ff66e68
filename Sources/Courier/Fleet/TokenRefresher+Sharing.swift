public import Foundation

extension TokenRefresher {
    /// How a ``TokenRefresher`` shares its token and its refreshes with the other replicas of a fleet through a
    /// ``SharedTokenStore``: however many replicas are rejected at once, one of them refreshes and every other
    /// one uses its token.
    ///
    /// ```swift
    /// let sharing = TokenRefresher.Sharing(store: store, onEvent: { logger.notice("\($0)") })
    /// let auth = TokenRefresher(token: .init(stored), sharing: sharing) { replaced in
    ///     try await tokenEndpoint.refresh(with: replaced.refreshToken!)
    /// }
    /// ```
    ///
    /// Nothing changes on a request whose token is valid: it reads the token in memory and never reaches the
    /// store. Only the refresh task (one per process at a time) talks to the store.
    ///
    /// **When the store fails** (it throws, or does not answer within ``storeTimeout``), the refresher reports
    /// ``Event/storeFailed(operation:error:)``. When it could not ask the store (`beginRefresh`), it refreshes
    /// locally, as it would without a store (but not when the store answered that it holds a token this replica
    /// cannot open, ``CourierError/Code/decodingFailed``: the refresh then fails with
    /// ``CourierError/Code/refreshFailed``, as another replica has used the refresh token this one holds): the process keeps working, at the risk the store was there to
    /// avoid (with refresh-token rotation and reuse detection, two replicas refreshing at once may revoke the
    /// token family; the Fleet article lists exactly when). When waiting for another replica's refresh fails,
    /// it never refreshes: it waits out that replica's lease, then asks again. A token obtained but not stored
    /// is used, and published to the store (compare-and-set) as soon as it answers (``Event/published(version:)``),
    /// before anything else at the next refresh. A waiting caller is never held past its own deadline: it stops
    /// waiting when its task is cancelled, as without a store.
    public struct Sharing: Sendable {
        /// What happened between a refresher and its store, for logs and metrics.
        public enum Event: Sendable, CustomStringConvertible {
            /// The store held a newer token than this replica's: it was used instead of refreshing.
            case adopted(version: Int)
            /// This replica took the lease and refreshed; the new token is `version`.
            case refreshed(version: Int)
            /// Another replica holds the lease; this one waits for its token.
            case waiting(holderLeaseLeft: Duration)
            /// A call to the store failed or timed out; the refresher goes on without it (see ``Sharing``).
            case storeFailed(operation: String, error: any Error)
            /// A token this replica obtained while the store failed was stored there as `version`.
            case published(version: Int)

            /// One line for a log.
            public var description: String {
                switch self {
                case .adopted(let version): "token v\(version) adopted from the shared store"
                case .refreshed(let version): "token refreshed for the fleet as v\(version)"
                case .waiting(let left): "another replica refreshes the token (its lease ends in \(left)); waiting"
                case .published(let version): "token obtained without the shared store stored there as v\(version)"
                case .storeFailed(let operation, let error):
                    "the shared token store failed (\(operation): \(Redaction.redactedText(String(describing: error)))); "
                        + Sharing.consequence(of: operation)
                }
            }
        }

        /// What the refresher does when `operation` failed.
        private static func consequence(of operation: String) -> String {
            switch operation {
            case "beginRefresh": "refreshing locally"
            case "waitForChange": "waiting out the holder's lease"
            case "finishRefresh", "replaceToken": "the token is used here and stored when the store answers"
            case "renewLease": "renewing again a third of the lease later"
            default: "the token is used here"
            }
        }

        /// The store the replicas share.
        public var store: any SharedTokenStore
        /// Who this refresher is in the store's lease. By default the host name, the process id and a random
        /// suffix; every ``TokenRefresher`` appends a suffix of its own, so one `Sharing` value may serve several
        /// refreshers.
        public var holder: String
        /// How long a lease lasts when its holder neither finishes nor fails, for example because its process
        /// was killed: then another replica refreshes. The holder renews it every third of the lease while its
        /// refresh runs (``SharedTokenStore/renewLease(holder:lease:)``), for up to ten leases, so a slow token
        /// endpoint does not let another replica in; it is how long a fleet may wait after a crash. 30 seconds by
        /// default.
        public var lease: Duration
        /// How long one call to the store may take before the refresher gives up on it and goes on locally.
        /// 5 seconds by default.
        public var storeTimeout: Duration
        /// Called with what happened; it runs on the refresh task and must be quick.
        public var onEvent: (@Sendable (Event) -> Void)?
        /// The wall clock, to turn a shared token's expiry into a lifetime. Inject a fixed date in tests.
        public var currentDate: @Sendable () -> Date

        /// Creates a sharing configuration; see each property for what it means.
        public init(
            store: any SharedTokenStore,
            holder: String = Sharing.defaultHolder(),
            lease: Duration = .seconds(30),
            storeTimeout: Duration = .seconds(5),
            onEvent: (@Sendable (Event) -> Void)? = nil,
            currentDate: @escaping @Sendable () -> Date = { Date() }
        ) {
            precondition(lease > .zero, "a refresh lease must last longer than zero")
            precondition(storeTimeout > .zero, "a store timeout must be longer than zero")
            self.store = store
            self.holder = holder
            self.lease = lease
            self.storeTimeout = storeTimeout
            self.onEvent = onEvent
            self.currentDate = currentDate
        }

        /// `host:pid:random`, unique per call.
        public static func defaultHolder() -> String {
            let info = ProcessInfo.processInfo
            return "\(info.hostName):\(info.processIdentifier):\(UInt32.random(in: .min ... .max))"
        }
    }
}
