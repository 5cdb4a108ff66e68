public import Foundation
import Synchronization

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// One call's ``CallSummary`` as the call runs, shared by the layer that reports it and the layers below that
/// fill it in.
///
/// **Who makes one.** The logging and timing middleware each make one per call (with a stopwatch on their
/// clock, so that the end of the chain can time the transport) and bind it to ``current`` for the rest of the
/// chain; a record bound above them is their `parent`, and everything recorded goes up the line, so an
/// observer inside a retry sees its attempt and an observer outside sees the whole call. A timeout that finds
/// no record makes one without a stopwatch: it only counts attempts, for the error it throws when the call's
/// time is up.
///
/// **Who writes to it, and when.** Only what happens off the fast path, and only then: a retry when it starts
/// attempt 2 or later and when it sleeps, a limiter when a request queued, a refresher when a request waited
/// for a refresh. The end of the chain times the transport only when a record has a stopwatch. A call that
/// goes straight through pays for the record, its binding, and one task-local look-up at the end of the chain.
///
/// No state machine: a value (the summary) behind a lock, changed by one-line additions.
@usableFromInline
package final class CallRecord: Sendable {
    /// The record of the call the current task is part of, if a layer above keeps one.
    @TaskLocal package static var current: CallRecord?

    /// The time since a fixed origin on the observing layer's clock; built once per middleware.
    package typealias Stopwatch = @Sendable () -> Duration

    private let summary = Mutex(CallSummary())
    private let parent: CallRecord?
    private let stopwatch: Stopwatch?

    /// A record under `parent` (the record bound above, if any), timing the transport with `stopwatch` if
    /// given.
    package init(parent: CallRecord?, stopwatch: Stopwatch? = nil) {
        self.parent = parent
        self.stopwatch = stopwatch
    }

    /// What has been recorded so far.
    package var snapshot: CallSummary {
        summary.withLock { $0 }
    }

    /// The number of attempts recorded so far.
    package var attempts: Int {
        summary.withLock { $0.attempts }
    }

    /// Notes that a retry layer started `attempt`.
    package func recordAttempt(_ attempt: Int) {
        update { $0.attempts = max($0.attempts, attempt) }
    }

    /// What a layer waits for, in ``measuring(_:_:)``.
    package enum Wait: Sendable {
        /// A slot of a concurrency or rate limit.
        case slot
        /// A token refresh.
        case refresh
    }

    /// Runs `wait` and adds its time on the record's stopwatch to the current record, if it has one; the
    /// layers call it only when they suspend.
    package static func measuring<Result>(
        _ kind: Wait,
        _ wait: () async throws -> Result
    ) async rethrows -> Result {
        guard let record = current, let stopwatch = record.stopwatch else { return try await wait() }
        let start = stopwatch()
        defer {
            let waited = stopwatch() - start
            switch kind {
            case .slot: record.update { $0.waitingForSlot += waited }
            case .refresh: record.update { $0.waitingForRefresh += waited }
            }
        }
        return try await wait()
    }

    /// Adds a retry's backoff sleep.
    package func addBackoff(_ duration: Duration) {
        update { $0.backoff += duration }
    }

    /// Adds the time a transport spent reading a body after its head arrived; a transport that tells the two
    /// apart calls it, and the end of the chain counts the rest of the exchange as the wait for the head.
    package func addWaitForBody(_ duration: Duration) {
        update { $0.waitingForBody += duration }
    }

    /// The time on the record's stopwatch, for a transport that times its body; `nil` for a record without one.
    package func now() -> Duration? {
        stopwatch?()
    }

    /// Adds the time since `start` (a reading of ``now()``) to the wait for the body.
    package func addWaitForBody(since start: Duration?) {
        guard let start, let end = stopwatch?() else { return }
        addWaitForBody(end - start)
    }

    private func update(_ change: (inout CallSummary) -> Void) {
        var record: CallRecord? = self
        while let current = record {
            current.summary.withLock { change(&$0) }
            record = current.parent
        }
    }

    // MARK: The end of the chain

    /// The current record, when it times the transport. Not inlined: the end of the chain calls it on every
    /// request, and a look-up is all it costs when no record is bound.
    @usableFromInline
    static var timingTransport: CallRecord? {
        guard let record = current, record.stopwatch != nil else { return nil }
        return record
    }

    /// Sends `request` with `transport`, adding the exchange's time to the wait for the head, minus what the
    /// transport itself recorded meanwhile as the wait for the body.
    @usableFromInline
    nonisolated(nonsending) func timingExchange(
        _ request: URLRequest,
        with transport: any Transport
    ) async throws -> (Data, HTTPURLResponse) {
        guard let stopwatch else { return try await transport.send(request) }
        let start = stopwatch()
        let bodyBefore = summary.withLock { $0.waitingForBody }
        defer {
            let total = stopwatch() - start
            let body = summary.withLock { $0.waitingForBody } - bodyBefore
            update { $0.waitingForHead += max(total - body, .zero) }
        }
        return try await transport.send(request)
    }
}

extension CallRecord {
    /// A stopwatch on `clock`: the time since now.
    package static func stopwatch<C: Clock<Duration>>(on clock: C) -> Stopwatch {
        let origin = clock.now
        return { origin.duration(to: clock.now) }
    }
}
