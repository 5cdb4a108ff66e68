/// The token state of one auth realm: a value type the server's actor owns.
///
/// At most one token is current. Issuing a new one revokes the old one (rotation); expiring it on
/// demand keeps it current but makes every later check fail until a new one is issued.
struct AuthRealm: Sendable {
    /// Why a protected request was turned away.
    enum Rejection: Equatable, Sendable {
        case missing
        case notCurrent
        case expired
    }

    let name: String
    private(set) var tokenRequests = 0
    private(set) var issued = 0
    private(set) var accepted = 0
    private(set) var rejected = 0
    private var current: (token: String, expiresAt: ContinuousClock.Instant)?

    init(name: String) {
        self.name = name
    }

    /// Counts a token request that is told to fail, without issuing anything.
    mutating func recordFailedTokenRequest() {
        self.tokenRequests += 1
    }

    /// Issues a new token, revoking the previous one.
    mutating func issue(expiresIn: Duration, now: ContinuousClock.Instant, nonce: String) -> String {
        self.tokenRequests += 1
        self.issued += 1
        let token = "\(self.name).\(self.issued).\(nonce)"
        self.current = (token, now.advanced(by: expiresIn))
        return token
    }

    /// Makes the current token unacceptable from now on; returns whether there was one.
    mutating func expireCurrent(now: ContinuousClock.Instant) -> Bool {
        guard let current else { return false }
        self.current = (current.token, now)
        return true
    }

    /// Checks a presented token and counts the outcome.
    mutating func check(_ token: String?, now: ContinuousClock.Instant) -> Rejection? {
        let rejection: Rejection?
        if let token, let current, token == current.token {
            rejection = now < current.expiresAt ? nil : .expired
        } else {
            rejection = token == nil ? .missing : .notCurrent
        }
        if rejection == nil {
            self.accepted += 1
        } else {
            self.rejected += 1
        }
        return rejection
    }

    var stats: AuthStats {
        AuthStats(
            realm: self.name,
            tokenRequests: self.tokenRequests,
            issued: self.issued,
            refreshes: max(self.issued - 1, 0),
            accepted: self.accepted,
            rejected: self.rejected
        )
    }
}
