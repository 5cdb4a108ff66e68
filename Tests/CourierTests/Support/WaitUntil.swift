import CourierTesting

/// Suspends until `condition` holds, yielding between checks; for state with no event to wait on (the
/// length of a queue inside a limiter or coalescer). It never sleeps and assumes nothing about timing.
///
/// Put a `.timeLimit` on the test: when the limit cancels the test, the wait ends with `CancellationError`
/// instead of spinning on forever (a spin that ignored cancellation kept a failing run from ever finishing).
///
/// - Throws: `CancellationError` when the test is cancelled before `condition` holds.
func waitUntil(_ condition: () -> Bool) async throws {
    while !condition() {
        try Task.checkCancellation()
        await Task.yield()
    }
}

/// Answers what `holding` holds one round at a time until `total` requests have been answered, a round
/// being as many as a limit of `limit` lets in at once (or what is left). With a limiter in front, a request
/// is held only while it has a permit, so `holding.peakHeldCount` is then the most that were ever let
/// through at once, in every round, not only the first.
func answerInRounds(_ holding: HoldingTransport, total: Int, limit: Int) async {
    var answered = 0
    while answered < total {
        await holding.waitUntilHolding(min(limit, total - answered))
        answered += holding.releaseAll()
    }
}
