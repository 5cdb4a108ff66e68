extension Task where Failure == any Error {
    /// Waits for the task to finish and returns its value, cancelling the task if the waiting task is cancelled
    /// first.
    ///
    /// Use it instead of `value` to await a task a test started. `value` waits for an unstructured task however
    /// long it takes: when the test's time limit passes and cancels the test, a call it started is not cancelled
    /// and keeps sleeping on a ``ManualClock`` nobody advances, so the test never returns and the whole run waits
    /// for it. `join()` passes the cancellation on: the call ends, and the test fails with its time limit
    /// instead of hanging.
    ///
    /// ```swift
    /// let call = Task { try await client.send(.get("/v1/me")) }
    /// await clock.waitForSleepers(count: 1)
    /// clock.advanceToNextDeadline()
    /// let (data, _) = try await call.join()
    /// ```
    ///
    /// - Returns: The task's value.
    /// - Throws: What the task threw, which is `CancellationError` (or the error the code under test makes of
    ///   a cancellation) when the waiting task was cancelled.
    public func join() async throws -> Success {
        try await withTaskCancellationHandler {
            try await value
        } onCancel: {
            cancel()
        }
    }
}

extension Task where Failure == Never {
    /// Waits for the task to finish and returns its value, cancelling the task if the waiting task is cancelled
    /// first.
    ///
    /// The form of `join()` for a task that cannot throw: the task's value arrives once the task
    /// finishes, which after a cancellation is as soon as the task notices it.
    ///
    /// - Returns: The task's value.
    public func join() async -> Success {
        await withTaskCancellationHandler {
            await value
        } onCancel: {
            cancel()
        }
    }
}
