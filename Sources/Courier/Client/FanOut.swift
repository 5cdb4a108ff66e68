/// Runs an operation over a sequence of inputs in a task group with at most `maxConcurrency` children alive.
///
/// The group starts `maxConcurrency` children, then adds the next child only when one has finished and its
/// result has been collected, so however long the input is, the number of live child tasks (and the inputs
/// they hold) stays bounded. Inputs are pulled from the sequence's iterator one at a time, so a lazy sequence
/// is never materialized.
///
/// Cancelling the calling task cancels every child and stops the reading of the input: the children still
/// running end (their results, usually `CancellationError`, are collected as usual), nothing more is read from
/// the sequence, and the call returns. So an endless input ends with the caller, and an input read up to
/// element *n* has exactly *n* results. (``results(_:maxConcurrency:isolation:operation:)`` gives a
/// `Collection` its remaining results without reading it.)
///
/// The group's body (reading the input sequence, collecting results, calling `handle`) runs on the caller's
/// isolation (`isolation`, `#isolation` at the public API): the sequence and the handler belong to the caller
/// and may be isolated to its actor (a lazy `map` written on the main actor, a handler that updates the
/// caller's state). The children run on the global executor and only call `operation`. A nonisolated caller
/// (the usual server case) runs the whole loop without any actor hop.
enum FanOut {
    /// The body of a child task: what to do for one input.
    typealias Operation<Input, Output> = @Sendable (Input) async throws -> Output

    /// Calls `handle` once for every input read, in completion order, with the input's position and its
    /// result.
    ///
    /// `handle` runs in the calling task between collections, so it is never called concurrently with
    /// itself. If it throws, the children still running are cancelled (and awaited) and the error is
    /// rethrown; no further inputs are started. Once the calling task is cancelled, no further input is read.
    ///
    /// - Returns: Whether the input was read to its end: `false` when a cancellation stopped the reading first.
    @discardableResult
    static func forEach<Input: Sendable, Output: Sendable, Failure: Error>(
        _ inputs: some Sequence<Input>,
        maxConcurrency: Int,
        isolation: isolated (any Actor)?,
        operation: @escaping Operation<Input, Output>,
        handle: (Int, Result<Output, any Error>) async throws(Failure) -> Void
    ) async throws(Failure) -> Bool {
        precondition(maxConcurrency > 0, "maxConcurrency must be at least 1, not \(maxConcurrency)")
        var failure: Failure?
        var readToEnd = false
        await withTaskGroup(of: (Int, Result<Output, any Error>).self, isolation: isolation) { group in
            // Capturing the isolated parameter is what makes this closure run on the caller's isolation
            // (SE-0420); without it, the nonisolated async closure would run on the global executor.
            _ = isolation
            var iterator = inputs.makeIterator()
            var nextIndex = 0
            var running = 0
            var doneReading = false
            while true {
                // Top up to the limit. Once the caller is cancelled, nothing more is read: the input may be
                // endless, and what was never read needs no result.
                while !doneReading, running < maxConcurrency {
                    if group.isCancelled {
                        doneReading = true
                        break
                    }
                    guard let input = iterator.next() else {
                        doneReading = true
                        readToEnd = true
                        break
                    }
                    let index = nextIndex
                    nextIndex += 1
                    let added = group.addTaskUnlessCancelled {
                        do {
                            return (index, .success(try await operation(input)))
                        } catch {
                            return (index, .failure(error))
                        }
                    }
                    if added {
                        running += 1
                    } else {
                        // Cancelled between reading this input and starting it: it gets its result, and the
                        // loop reads no more.
                        doneReading = true
                        do throws(Failure) {
                            try await handle(index, .failure(CancellationError()))
                        } catch {
                            failure = error
                            group.cancelAll()
                            return
                        }
                    }
                }
                guard let (index, result) = await group.next() else { return }
                running -= 1
                do throws(Failure) {
                    try await handle(index, result)
                } catch {
                    failure = error
                    group.cancelAll()
                    return
                }
            }
        }
        if let failure { throw failure }
        return readToEnd
    }

    /// Returns one result per input, in input order.
    ///
    /// When the calling task is cancelled, reading stops (see ``forEach(_:maxConcurrency:isolation:operation:handle:)``).
    /// A `Collection` (which is finite) still gets one result per element: the elements never read get
    /// `CancellationError`, counted with `count` rather than read (a lazy map's transform is not called for
    /// them). Any other sequence may be endless, so its results stop at the last element read.
    static func results<Input: Sendable, Output: Sendable>(
        _ inputs: some Sequence<Input>,
        maxConcurrency: Int,
        isolation: isolated (any Actor)?,
        operation: @escaping Operation<Input, Output>
    ) async -> [Result<Output, any Error>] {
        // Slots are filled with a placeholder as indices are handed out and each is overwritten by its
        // request's result, so the array is returned as it is: no optionals, no second array at the end.
        var results: [Result<Output, any Error>] = []
        results.reserveCapacity(inputs.underestimatedCount)
        await forEach(inputs, maxConcurrency: maxConcurrency, isolation: isolation, operation: operation) {
            index,
            result in
            // Capturing `isolation` keeps this closure on the caller's isolation, where `forEach` calls it;
            // a nonisolated async closure would hop to the global executor and back for every result.
            _ = isolation
            while results.count <= index { results.append(.failure(CancellationError())) }
            results[index] = result
        }
        // Short only after a cancellation stopped the reading (every element read got its result above).
        if Task.isCancelled, let collection = inputs as? any Collection {
            let count = collection.count
            while results.count < count { results.append(.failure(CancellationError())) }
        }
        return results
    }

    /// Returns every output in input order, or throws the first error (in completion order) after cancelling
    /// and awaiting the children still running.
    static func outputs<Input: Sendable, Output: Sendable>(
        _ inputs: some Sequence<Input>,
        maxConcurrency: Int,
        isolation: isolated (any Actor)?,
        operation: @escaping Operation<Input, Output>
    ) async throws -> [Output] {
        var outputs: [Output?] = []
        outputs.reserveCapacity(inputs.underestimatedCount)
        let readToEnd: Bool
        do {
            // The handler throws the first failure (in completion order); `forEach` then starts no further
            // input, cancels the children still running and awaits them before rethrowing it.
            readToEnd = try await forEach(
                inputs,
                maxConcurrency: maxConcurrency,
                isolation: isolation,
                operation: operation
            ) {
                index,
                result in
                _ = isolation  // keeps the handler on the caller's isolation; see `results`
                while outputs.count <= index { outputs.append(nil) }
                outputs[index] = try result.get()
            }
        } catch {
            // A failure caused by the caller's cancellation is reported as such, never wrapped.
            if Task.isCancelled { throw CancellationError() }
            throw error
        }
        // A cancellation that stopped the reading may leave inputs without an output, even when every request
        // read succeeded (one that ignores cancellation, or whose response beat it): never a short array. A
        // collection tells whether any was left; another sequence might go on, so its reading must have ended.
        guard readToEnd || (inputs as? any Collection)?.count == outputs.count else { throw CancellationError() }
        return outputs.map { $0! }
    }
}
