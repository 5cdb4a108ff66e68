import Courier
import CourierTesting
import Foundation
import Testing

/// A seeded model of a fleet whose store fails: replicas refresh one after another, in a seeded order, on one
/// in-memory store behind a ``FlakyTokenStore`` whose calls fail per a seeded schedule (before the store did
/// anything, or after it committed: the answer lost, as on a timeout), against a token endpoint with rotation and
/// reuse detection.
///
/// The invariant: a refresh token is presented twice only by a replica that refreshed locally because
/// `beginRefresh` failed (``TokenRefresher/Sharing/Event/storeFailed(operation:error:)`` for `beginRefresh`): the
/// documented risk of the local fallback. Whatever else fails (`finishRefresh`, `waitForChange`, before or after
/// committing), no refresh token is presented twice. Every refresh ends, with a token or a ``CourierError``.
///
/// One ``ManualClock/run(whenSleeping:_:)`` drives all 24 refreshes, so time moves only when every replica's work
/// (the refreshes and the publishing they leave running in the background) waits for the clock. Stepping each
/// refresh on its own let time run past a background publication that had not had its turn yet, and spinning on
/// `Task.yield()` instead took over a minute per case in a full sanitized run; driven as one run, the eight cases
/// take 0.03 s.
@Suite("A seeded model of a fleet whose store fails", .timeLimit(.minutes(1)))
struct SharedTokenModelTests {
    /// SplitMix64: the same numbers for the same seed.
    struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// The fault of the `call`-th call of `operation` under `seed`: one call in five fails, half of them after
    /// committing; `beginRefresh` fails only when `beginRefreshFails`.
    static func fault(
        seed: UInt64,
        beginRefreshFails: Bool
    ) -> @Sendable (FlakyTokenStore<ManualClock>.Operation, Int) -> FlakyTokenStore<ManualClock>.Fault? {
        { operation, call in
            if operation == .beginRefresh && !beginRefreshFails { return nil }
            let index = UInt64(FlakyTokenStore<ManualClock>.Operation.allCases.firstIndex(of: operation)!)
            var random = Seeded(state: seed &* 1_000_003 &+ index &* 65_537 &+ UInt64(call))
            switch random.next() % 10 {
            case 0: return .before
            case 1: return .afterCommit
            default: return nil
            }
        }
    }

    @Test(
        "Replicas refreshing one after another while the store fails: reuses only after a local fallback",
        arguments: [(1, false), (2, false), (3, false), (4, false), (5, true), (6, true), (7, true), (8, true)]
    )
    func seededRun(seed: UInt64, beginRefreshFails: Bool) async throws {
        let server = RotatingTokenServer()
        let clock = ManualClock()
        let events = SharingEvents()
        let shared = InMemorySharedTokenStore(
            token: SharedToken("access-1", refreshToken: "refresh-1", version: 1),
            clock: clock
        )
        let flaky = FlakyTokenStore(shared, fault: Self.fault(seed: seed, beginRefreshFails: beginRefreshFails))
        let replicas = (0..<4).map { index in
            TokenRefresher(
                token: RotatingTokenServer.token(1),
                limit: .init(maximum: 1000, per: .seconds(1)),
                clock: clock,
                sharing: .init(store: flaky, holder: "replica-\(index)", onEvent: events.record)
            ) { [server] replaced in
                try server.refresh(with: replaced.refreshToken)
            }
        }
        // Time moves only when every replica's work (the refreshes and the publishing in the background) has
        // nothing left to do but wait for the clock: a lease, a store's time limit, a retry.
        let outcomes = try await clock.run {
            var order = Seeded(state: seed)
            var outcomes: [String] = []
            for _ in 0..<24 {
                let replica = replicas[Int(order.next() % UInt64(replicas.count))]
                do {
                    outcomes.append(try await replica.refresh().value)
                } catch let error as CourierError {
                    outcomes.append("\(error.code)")
                }
            }
            return outcomes
        }

        let fallbacks = events.all.count { $0 == "storeFailed beginRefresh" }
        #expect(outcomes.count == 24)
        // The family is revoked (a refresh token presented twice) only when some replica refreshed locally.
        #expect(!server.isRevoked || fallbacks > 0, "events: \(events.all)")
        if fallbacks == 0 {
            // Nothing refreshed locally with the fleet's refresh token: however the store failed otherwise, no
            // refresh token was presented twice and no refresh failed.
            #expect(server.reuses == 0, "events: \(events.all)")
            #expect(!outcomes.contains("refreshFailed"), "outcomes: \(outcomes)")
        }
    }
}
