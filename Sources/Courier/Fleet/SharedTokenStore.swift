public import Foundation

/// A token as the replicas of a fleet share it: what ``TokenRefresher/Token`` holds, with a wall-clock expiry
/// (replicas have no clock in common but the wall clock) and the version the shared store gave it.
public struct SharedToken: Sendable, Hashable, CustomStringConvertible {
    /// The credential, for example an OAuth access token.
    public var value: String
    /// The secret the refresh closure needs to get the next token (an OAuth refresh token), or `nil`. It
    /// travels with the token so that a replica never refreshes with a refresh token that another replica has
    /// already used (with rotation and reuse detection, that would revoke the whole token family).
    public var refreshToken: String?
    /// When the token expires, in wall-clock time; `nil` when unknown.
    public var expiresAt: Date?
    /// 1 for the first token a store holds, one more for every token stored since: a replica that holds version
    /// `n` and finds `n + 1` uses it instead of refreshing.
    public var version: Int

    /// Creates a shared token.
    public init(_ value: String, refreshToken: String? = nil, expiresAt: Date? = nil, version: Int) {
        self.value = value
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
        self.version = version
    }

    /// `SharedToken(v<version>, <redacted>)`, with the expiry if there is one; never a secret.
    public var description: String {
        let expiry = expiresAt.map { ", expires at \($0)" } ?? ""
        return "SharedToken(v\(version), \(Redaction.placeholder)\(expiry))"
    }
}

/// What ``SharedTokenStore/beginRefresh(after:holder:lease:)`` found.
public enum SharedRefreshLease: Sendable, Hashable {
    /// The store holds a newer token than the caller's: use it, do not refresh.
    case newer(SharedToken)
    /// The caller holds the refresh lease now. The token is the store's current one (or `nil` when the store
    /// holds none), read after the lease was taken: refresh with *its* refresh token, not an older one.
    case acquired(SharedToken?)
    /// Another replica holds the lease for this long still: wait for a change
    /// (``SharedTokenStore/waitForChange(after:timeout:)``), at most this long, then ask again.
    case held(expiresIn: Duration)
}

/// Where the replicas of a fleet share one token and take turns refreshing it, so that any number of them
/// rejected at once refresh it **once**.
///
/// A ``TokenRefresher`` given a store (``TokenRefresher/Sharing``) keeps its in-process single flight: one
/// refresh task per process. That task then asks the store before it calls the refresh closure:
/// 1. ``beginRefresh(after:holder:lease:)`` is one atomic step: if the store holds a newer version than the
///    replica's, the replica uses it; otherwise, when nobody holds the lease (or its holder's lease has
///    expired: a crashed refresher cannot block the fleet), the caller takes it for `lease` and gets the
///    current token **read under the lease** (the stale-refresh-token race is closed here, not by the caller).
/// 2. The holder refreshes (renewing its lease with ``renewLease(holder:lease:)`` every third of it while the
///    refresh runs) and calls ``finishRefresh(_:holder:)``, which stores the new token as the next
///    version only if no newer one was stored meanwhile (compare-and-set on the version), and releases the
///    lease; a failed refresh releases it with `nil`, so another replica may try at once.
/// 3. Every other replica waits with ``waitForChange(after:timeout:)`` (woken by the store, not by polling,
///    where the store can), then asks again.
///
/// A store's methods may throw: the refresher then goes on without it and reports it (see
/// ``TokenRefresher/Sharing``). ``InMemorySharedTokenStore`` is one for replicas in one process (and for
/// tests); the `Postgres` trait adds `PostgresSharedTokenStore`. Conform a Redis or Valkey one with the same
/// rules: each step atomic, leases measured on one clock (the store's, not the replicas').
public protocol SharedTokenStore: Sendable {
    /// The current token, or `nil` when the store holds none.
    func token() async throws -> SharedToken?

    /// Takes the refresh lease for `holder`, for `lease`, unless a token newer than `version` is stored (then
    /// returns it) or another holder's lease has not expired (then says how long it has left). A holder that
    /// already holds the lease takes it again, with a new expiry.
    ///
    /// - Parameters:
    ///   - version: The version the caller holds; 0 when it holds none from this store.
    ///   - holder: Who asks: unique per refresher and process.
    ///   - lease: How long the lease lasts when nobody releases it.
    ///
    /// Throw ``CourierError/Code/decodingFailed`` when the store holds a token it cannot give this caller (sealed
    /// with a key the caller was not given): the refresher then fails the refresh instead of refreshing locally,
    /// since another replica has refreshed with the refresh token this one holds. Any other error is an outage:
    /// the refresher refreshes locally.
    func beginRefresh(after version: Int, holder: String, lease: Duration) async throws -> SharedRefreshLease

    /// Ends `holder`'s refresh: stores `token` when its version is exactly one more than the stored one (and
    /// wakes the waiters), and releases `holder`'s lease in any case (`nil` releases it only: the refresh
    /// failed). Storing a token whose version is not the next one stores nothing.
    ///
    /// - Returns: The current token afterwards: `token`, or the newer one that made it not the next.
    @discardableResult
    func finishRefresh(_ token: SharedToken?, holder: String) async throws -> SharedToken?

    /// Stores `token` as the next version whatever is stored (its own ``SharedToken/version`` is ignored), and
    /// wakes the waiters: a token obtained elsewhere, for example after the user signed in again.
    ///
    /// - Returns: The token as stored, with its version.
    func replaceToken(_ token: SharedToken) async throws -> SharedToken

    /// Extends `holder`'s lease to end `lease` from now, if `holder` still holds it (or held it last and nobody
    /// took it since); never takes a lease that was released or that another holder took.
    ///
    /// The holder of a refresh that runs longer than a third of its lease calls it every third of the lease, so
    /// a slow token endpoint never lets a second replica in with the same refresh token, while a holder that
    /// dies stops renewing and blocks the fleet for one lease at most. The default implementation renews
    /// nothing and returns `false`: with such a store, a refresh that outlives its lease may overlap another.
    ///
    /// - Returns: Whether the lease is `holder`'s, with its new expiry.
    func renewLease(holder: String, lease: Duration) async throws -> Bool

    /// Returns once the stored version is greater than `version` or the lease was released, or after
    /// `timeout`, whichever comes first; at once when either is already so. Returning says nothing: the caller
    /// asks ``beginRefresh(after:holder:lease:)`` again.
    ///
    /// - Throws: `CancellationError` when the calling task is cancelled; errors of the store.
    func waitForChange(after version: Int, timeout: Duration) async throws
}

extension SharedTokenStore {
    /// Renews nothing: a store written before leases could be renewed. See the requirement.
    public func renewLease(holder: String, lease: Duration) async throws -> Bool { false }
}
