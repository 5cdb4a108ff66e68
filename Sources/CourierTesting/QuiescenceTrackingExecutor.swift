import Courier
import Dispatch

/// The task executor of one ``ManualClock/run(whenSleeping:_:)``: it runs the jobs of the operation's tasks
/// on Dispatch's global queue and counts those enqueued and not yet finished, so the clock can tell when
/// every one of them is suspended (the run is *quiescent*) and only time can move it on.
///
/// **What it sees.** A task prefers this executor when it is the run's operation or a structured child of it
/// (task groups, `async let`: the middleware's timeouts, hedges, fan-out), and the code of default actors such
/// a task calls runs here too. Unstructured tasks (`Task { }`, `Task.detached`) do not inherit the
/// preference, nor does code on an actor with an executor of its own (the main actor), so their work is not
/// counted.
///
/// **Why the count is exact for what it sees.** Resuming a suspended task (a continuation, a sleeper woken by
/// ``ManualClock/advance(to:)``, an answer from a transport's thread) enqueues its job here synchronously, before
/// the resuming code goes on; a job that resumes another task therefore raises the count before its own end
/// lowers it, so the count reaches zero only when nothing seen is running or about to run.
final class QuiescenceTrackingExecutor: TaskExecutor {
    private let pending = LockedState(0)
    private let onQuiescent: @Sendable () -> Void

    /// - Parameter onQuiescent: Called (outside any lock) each time the last pending job finishes.
    init(onQuiescent: @escaping @Sendable () -> Void) {
        self.onQuiescent = onQuiescent
    }

    /// Whether no job is running or waiting to run.
    var isQuiescent: Bool { pending.withLock { $0 == 0 } }

    func enqueue(_ job: consuming ExecutorJob) {
        pending.withLock { $0 += 1 }
        let job = UnownedJob(job)
        // The closure holds the executor strongly, so it outlives every job it has accepted.
        DispatchQueue.global().async {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
            let quiescent = self.pending.withLock { pending in
                pending -= 1
                return pending == 0
            }
            if quiescent { self.onQuiescent() }
        }
    }
}
