/// Work that Courier starts on behalf of many callers and that outlives the caller who started it: a
/// `TokenRefresher`'s refresh, a coalesced call.
///
/// Such work runs in an unstructured task, so that no single caller's cancellation stops it for everybody. It
/// inherits the caller's task-local values — a test's transport (`MockTransport.current`, the `.mockTransport`
/// trait) reaches a refresh that sends through a client — and each user decides which of Courier's per-call
/// values it must shed (a coalesced call sheds the caller's deadline; a refresh, everything in
/// ``withoutCallContext(_:)``). It prefers the task executor in ``executor``: none outside tests;
/// `ManualClock.run` sets its own, so that it counts the shared work's jobs and does not move time while a
/// refresh is running.
package enum SharedWork {
    /// The task executor that shared work started in this task prefers.
    @TaskLocal package static var executor: (any TaskExecutor)?

    /// Starts `operation` as shared work: an unstructured task with the caller's task-local values, on
    /// ``executor``.
    @discardableResult
    package static func start(
        priority: TaskPriority? = nil,
        _ operation: sending @escaping () async -> Void
    ) -> Task<Void, Never> {
        task(priority: priority, operation)
    }

    /// An unstructured task that prefers ``executor`` when there is one, and a plain task otherwise: a task made
    /// with a preference, even `nil`, costs more on every resumption (≈ 360 instructions a chunk of a streamed
    /// body, `streamedChunk`).
    package static func task<Success: Sendable>(
        priority: TaskPriority? = nil,
        _ operation: sending @escaping () async -> Success
    ) -> Task<Success, Never> {
        if let executor {
            return Task(executorPreference: executor, priority: priority, operation: operation)
        }
        return Task(priority: priority, operation: operation)
    }

    /// The same, for an operation that throws.
    package static func task<Success: Sendable>(
        priority: TaskPriority? = nil,
        _ operation: sending @escaping () async throws -> Success
    ) -> Task<Success, any Error> {
        if let executor {
            return Task(executorPreference: executor, priority: priority, operation: operation)
        }
        return Task(priority: priority, operation: operation)
    }

    /// Runs `operation` with none of the per-call task-local values Courier's middleware set: the caller's
    /// deadline, retry context, redirect hop, attached credential, stream call, cache credential witness, call
    /// record and idempotency keys (a refresh's token request gets a key of its own, not one an earlier refresh of
    /// the same call was given).
    package static func withoutCallContext(_ operation: () async -> Void) async {
        await Deadline.$current.withValue(nil) {
            await RetryContext.$current.withValue(nil) {
                await RedirectContext.$currentHop.withValue(nil) {
                    await AttachedCredential.$current.withValue(nil) {
                        await StreamCall.$current.withValue(nil) {
                            await CredentialWitness.$current.withValue(nil) {
                                await CallRecord.$current.withValue(nil) {
                                    await IdempotencyKeyMemory.$current.withValue(nil) {
                                        await IdempotencyKeyMemory.$header.withValue(nil) { await operation() }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
