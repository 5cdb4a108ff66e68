import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The timers that enforce a client's per-request timeouts (``Request/timeout``): one ``DeadlineTimer`` for each
/// distinct duration, shared by every request of that duration, as a timeout middleware shares one.
///
/// **Why.** A per-request timeout raced the call against a sleeping child task: two child tasks a call, and a
/// cancelled sleep leaves its timer in the runtime until its deadline (20,000 calls a second with a 10-second
/// timeout keep about 200,000 of them alive). On a shared timer a call costs the timer's short critical sections,
/// and over a transport that enforces deadlines (see `DeadlineEnforcingTransport`) the chain runs in the caller's
/// own task, with no child task at all.
///
/// **Why one timer per duration.** A timer's queue is in deadline order because every deadline in it is "now plus
/// the same duration"; requests with different durations would put it out of order. Clients use a handful of
/// durations, so the timers are kept in a short array, searched without hashing. A client that makes up a new
/// duration per request (a budget left over, say) stops adding timers at ``limit``, and its later durations take
/// the per-request race, which is correct, only dearer.
final class RequestTimeouts: Sendable {
    /// The most distinct durations that get a timer of their own.
    static let limit = 16

    private let timers = LockedState<[(duration: Duration, timer: DeadlineTimer<ContinuousClock>)]>([])

    /// The timer for requests whose timeout is `duration`, made on first use; `nil` once ``limit`` other durations
    /// have one.
    func timer(for duration: Duration) -> DeadlineTimer<ContinuousClock>? {
        timers.withLock { timers in
            for entry in timers where entry.duration == duration {
                return entry.timer
            }
            guard timers.count < Self.limit else { return nil }
            let timer = DeadlineTimer(clock: ContinuousClock())
            timers.append((duration, timer))
            return timer
        }
    }

    /// The durations that have a timer, in the order they got one; for tests.
    var durations: [Duration] {
        timers.withLock { $0.map(\.duration) }
    }
}

/// A per-request timeout as ``ClientLifecycle`` runs it around the chain, once the client has counted the call
/// (so a closed client refuses a timed call as it refuses any other): on the client's timer for its duration,
/// or, for a duration past the timers' limit, the per-request race.
enum RequestTimeout: Sendable {
    case onTimer(Duration, DeadlineTimer<ContinuousClock>)
    case race(Duration)

    /// Sends `request` through the whole of `chain` under the timeout, as a timeout middleware in front of the
    /// first layer would.
    func send(_ request: URLRequest, through chain: Chain) async throws -> (Data, HTTPURLResponse) {
        switch self {
        case .onTimer(let duration, let timer):
            try await TimeoutRunner.run(duration, timer: timer, request: request, next: Next(chain: chain, index: 0))
        case .race(let duration):
            try await TimeoutRunner.run(duration, clock: ContinuousClock(), request: request) {
                try await chain.send($0, from: 0)
            }
        }
    }
}
