/// Suspends until `condition` holds, yielding between checks; for state with no event to wait on (the
/// length of a queue inside a limiter or coalescer). It never sleeps and assumes nothing about timing; put a
/// `.timeLimit` on the test.
func waitUntil(_ condition: () -> Bool) async {
    while !condition() { await Task.yield() }
}
