/// The counters the server keeps for one key, as `/count/:key` and `/wait/:key` report them.
///
/// Keys are chosen by the test, so tests that run in parallel never share a counter.
public struct CounterSnapshot: Codable, Sendable, Equatable {
    /// The key these counters belong to.
    public var key: String
    /// Requests counted for the key: `/hit/:key`, and any request carrying `countKey=KEY` in its
    /// query or an `X-Count-Key: KEY` header.
    public var hits: Int
    /// Requests `/flaky/:key` has received for the key (failed ones and successful ones).
    public var flakyAttempts: Int
    /// `/hang?key=KEY` requests that are waiting right now.
    public var hanging: Int
    /// `/hang?key=KEY` requests that have ended: the client went away or the server shut down.
    public var hangsEnded: Int
    /// `/wait/:key` long polls on the key that are waiting right now.
    public var waiting: Int

    /// Creates a snapshot.
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - hits: The number of counted requests.
    ///   - flakyAttempts: The number of `/flaky` attempts.
    ///   - hanging: The number of requests hanging now.
    ///   - hangsEnded: The number of hanging requests that have ended.
    ///   - waiting: The number of long polls waiting now.
    public init(
        key: String,
        hits: Int = 0,
        flakyAttempts: Int = 0,
        hanging: Int = 0,
        hangsEnded: Int = 0,
        waiting: Int = 0
    ) {
        self.key = key
        self.hits = hits
        self.flakyAttempts = flakyAttempts
        self.hanging = hanging
        self.hangsEnded = hangsEnded
        self.waiting = waiting
    }
}
