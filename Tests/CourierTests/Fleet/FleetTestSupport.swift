import Courier
import CourierTesting
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An OAuth token endpoint with refresh-token rotation and reuse detection, and the API behind it: a refresh
/// token works once; presenting a used one again revokes the whole token family, after which no access token
/// of it is accepted.
final class RotatingTokenServer: Sendable {
    struct RefreshTokenReused: Error {}

    private struct State {
        var generation = 1
        /// Whether the current access token is still accepted (``expireAccessToken()`` ends it early).
        var accessValid = true
        var revoked = false
        var refreshes = 0
        var reuses = 0
    }

    private let state = LockedState(State())

    /// The token pair of `generation`.
    static func token(_ generation: Int) -> TokenRefresher.Token {
        .init("access-\(generation)", refreshToken: "refresh-\(generation)")
    }

    /// How many refreshes were asked for, successful or not.
    var refreshes: Int { state.withLock { $0.refreshes } }
    /// How many times a used refresh token was presented (each revoked the family).
    var reuses: Int { state.withLock { $0.reuses } }
    /// Whether the family was revoked.
    var isRevoked: Bool { state.withLock { $0.revoked } }

    /// Makes the current access token rejected, as if it had expired; its refresh token still works.
    func expireAccessToken() {
        state.withLock { $0.accessValid = false }
    }

    /// The token endpoint: the next pair for the current refresh token; a used one revokes the family.
    func refresh(with refreshToken: String?) throws -> TokenRefresher.Token {
        try state.withLock { state in
            state.refreshes += 1
            guard !state.revoked, refreshToken == "refresh-\(state.generation)" else {
                state.reuses += 1
                state.revoked = true
                throw RefreshTokenReused()
            }
            state.generation += 1
            state.accessValid = true
            return Self.token(state.generation)
        }
    }

    /// The API: 200 for the current access token of a family not revoked, 401 otherwise.
    func api() -> MockTransport {
        MockTransport { request in
            let accepted = self.state.withLock { state in
                !state.revoked && state.accessValid
                    && request.urlRequest.value(forHTTPHeaderField: "Authorization")
                        == "Bearer access-\(state.generation)"
            }
            return accepted ? .ok : .status(401, body: #"{"error":"invalid_token"}"#)
        }
    }
}

/// Sends `count` requests at once through `client`; returns how many got 200 and the errors of the others.
func sendConcurrently(_ count: Int, through client: Client) async -> (ok: Int, errors: [String]) {
    await withTaskGroup(of: String?.self) { group in
        for _ in 0..<count {
            group.addTask {
                do {
                    let status = try await client.send(authenticatedRequest()).1.statusCode
                    return status == 200 ? nil : "status \(status)"
                } catch {
                    return String(describing: error)
                }
            }
        }
        var ok = 0
        var errors: [String] = []
        for await error in group {
            if let error { errors.append(error) } else { ok += 1 }
        }
        return (ok, errors)
    }
}

/// Records a refresher's sharing events.
final class SharingEvents: Sendable {
    private let events = LockedState<[String]>([])

    var all: [String] { events.withLock { $0 } }

    func record(_ event: TokenRefresher.Sharing.Event) {
        let name =
            switch event {
            case .adopted(let version): "adopted v\(version)"
            case .refreshed(let version): "refreshed v\(version)"
            case .waiting: "waiting"
            case .storeFailed(let operation, _): "storeFailed \(operation)"
            case .published(let version): "published v\(version)"
            }
        events.withLock { $0.append(name) }
    }
}
