public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

// Fan-out: many requests from one call, in a task group with a bounded number of live children.
//
// None of these is isolated to the client actor, so they never hop onto it: each child calls the
// nonisolated `send`, which reads the client's composed chain under a lock. Their `isolated` parameter
// (`#isolation` by default) makes them run on the *caller's* isolation instead — `nonisolated` for a
// nonisolated caller, with no hop at all; the caller's actor for a caller on an actor, so that the input
// sequence (a lazy `map` closure) and `sendEach`'s handler run where they were written. (A method with an
// `isolated` parameter cannot also be marked `nonisolated`; the parameter is what takes it off the actor.)

extension Client {
    // MARK: One result per request

    /// Sends many typed requests, at most `maxConcurrency` at a time, and returns one result per request in
    /// the order of `requests`.
    ///
    /// A failure does not lose the other responses: each request gets its own `Result`.
    ///
    /// ```swift
    /// let results = await client.sendAll(ids.map { Request<User>.get("/users/\($0)") }, maxConcurrency: 16)
    /// for case .success(let user) in results { print(user.name) }
    /// ```
    ///
    /// The requests run as children of a task group that never holds more than `maxConcurrency` children:
    /// the next request starts when one finishes. So 100,000 requests at 64 concurrent hold 64 tasks, not
    /// 100,000, and a lazy sequence (`(0..<n).lazy.map { … }`) is never materialized. Only the results array
    /// grows with the input; for a huge input whose results you can handle one at a time, use
    /// `sendEach(_:maxConcurrency:_:)` instead.
    ///
    /// **Cancellation.** Cancelling the calling task cancels every request in flight and stops the reading of
    /// `requests`; the call returns once the requests in flight have ended. What you get back depends on
    /// whether `requests` is a `Collection`:
    /// - a `Collection` (an array, a range, `ids.lazy.map { … }`) is finite, so you still get one result per
    ///   element: the requests in flight end with `.failure(CancellationError())` (or the response that beat
    ///   the cancellation), and the rest get `.failure(CancellationError())` without being sent — nor read: a
    ///   lazy map's closure is not called for them;
    /// - any other sequence may be endless (`(0...).lazy.map { … }`, an iterator), so the array stops at the
    ///   last element read: it has one result per element read, and is shorter than the input.
    ///
    /// Middleware such as ``Middleware/limitingConcurrency(maxInFlight:perHost:maxQueued:)`` still apply to
    /// every request, so a shared limit holds across several `sendAll` calls.
    ///
    /// - Parameters:
    ///   - requests: The requests; any sequence (an array, a lazy map, …), read once, in order.
    ///   - maxConcurrency: The most requests in flight at once; must be at least 1.
    ///   - isolation: Where the input sequence is read and results are collected: the caller's isolation
    ///     (the default); leave it out.
    /// - Returns: The result of each request, in the order of `requests`.
    public func sendAll<Response: Sendable>(
        _ requests: some Sequence<Request<Response>>,
        maxConcurrency: Int,
        isolation: isolated (any Actor)? = #isolation
    ) async -> [Result<Response, any Error>] {
        await FanOut.results(requests, maxConcurrency: maxConcurrency, isolation: isolation) { request in
            try await self.send(request)
        }
    }

    /// Sends many `URLRequest`s, at most `maxConcurrency` at a time, and returns one result per request in
    /// the order of `requests`.
    ///
    /// ```swift
    /// let results = await client.sendAll(urls.map { URLRequest(url: $0) }, maxConcurrency: 8)
    /// ```
    ///
    /// Behaves like the typed `sendAll(_:maxConcurrency:)` (bounded task group, input order, and on
    /// cancellation one result per element of a `Collection`, or a result per element read of any other
    /// sequence), returning each response as it is, without checking its status.
    ///
    /// - Parameters:
    ///   - requests: The requests, each with an absolute URL.
    ///   - maxConcurrency: The most requests in flight at once; must be at least 1.
    ///   - isolation: Where the input sequence is read and results are collected: the caller's isolation
    ///     (the default); leave it out.
    /// - Returns: The result of each request, in the order of `requests`.
    public func sendAll(
        _ requests: some Sequence<URLRequest>,
        maxConcurrency: Int,
        isolation: isolated (any Actor)? = #isolation
    ) async -> [Result<(Data, HTTPURLResponse), any Error>] {
        await FanOut.results(requests, maxConcurrency: maxConcurrency, isolation: isolation) { request in
            try await self.send(request)
        }
    }

    // MARK: All or nothing

    /// Sends many typed requests, at most `maxConcurrency` at a time, and returns every response in the
    /// order of `requests` — or throws the first error, after cancelling the requests still in flight.
    ///
    /// Use it when one failure makes the whole batch useless:
    ///
    /// ```swift
    /// let users = try await client.sendAllOrThrow(ids.map { Request<User>.get("/users/\($0)") }, maxConcurrency: 16)
    /// ```
    ///
    /// On the first failure (in the order requests finish), no further request is started, the ones in
    /// flight are cancelled, and the call returns once they have all ended (structured concurrency: nothing
    /// keeps running behind your back). Cancelling the calling task does the same and throws
    /// `CancellationError`; nothing more is read from `requests`, so an endless input ends too. It never
    /// returns fewer responses than `requests`: a cancellation that left one unsent throws, even when every
    /// request already in flight succeeded; once every request of a collection was sent, their responses are
    /// returned (a sequence that is not a collection throws unless it was read to its end).
    ///
    /// - Parameters:
    ///   - requests: The requests; any sequence, read once, in order.
    ///   - maxConcurrency: The most requests in flight at once; must be at least 1.
    ///   - isolation: Where the input sequence is read and results are collected: the caller's isolation
    ///     (the default); leave it out.
    /// - Returns: The decoded responses, in the order of `requests`.
    /// - Throws: The first error a request threw, or `CancellationError` when the calling task is cancelled.
    public func sendAllOrThrow<Response: Sendable>(
        _ requests: some Sequence<Request<Response>>,
        maxConcurrency: Int,
        isolation: isolated (any Actor)? = #isolation
    ) async throws -> [Response] {
        try await FanOut.outputs(requests, maxConcurrency: maxConcurrency, isolation: isolation) { request in
            try await self.send(request)
        }
    }

    /// Sends many `URLRequest`s, at most `maxConcurrency` at a time, and returns every response in the order
    /// of `requests` — or throws the first error, after cancelling the requests still in flight.
    ///
    /// ```swift
    /// let pages = try await client.sendAllOrThrow(urls.map { URLRequest(url: $0) }, maxConcurrency: 8)
    /// ```
    ///
    /// - Parameters:
    ///   - requests: The requests, each with an absolute URL.
    ///   - maxConcurrency: The most requests in flight at once; must be at least 1.
    ///   - isolation: Where the input sequence is read and results are collected: the caller's isolation
    ///     (the default); leave it out.
    /// - Returns: The response bodies and HTTP responses, in the order of `requests`.
    /// - Throws: The first error a request threw, or `CancellationError` when the calling task is cancelled.
    public func sendAllOrThrow(
        _ requests: some Sequence<URLRequest>,
        maxConcurrency: Int,
        isolation: isolated (any Actor)? = #isolation
    ) async throws -> [(Data, HTTPURLResponse)] {
        try await FanOut.outputs(requests, maxConcurrency: maxConcurrency, isolation: isolation) { request in
            try await self.send(request)
        }
    }

    // MARK: Streaming

    /// Sends many typed requests, at most `maxConcurrency` at a time, and hands each result to `handle` as
    /// soon as it arrives, with the request's position in `requests`.
    ///
    /// Nothing is accumulated, so memory stays flat however long the input is — use it for huge or lazily
    /// generated inputs:
    ///
    /// ```swift
    /// let requests = (0..<1_000_000).lazy.map { Request<Item>.get("/items/\($0)") }
    /// await client.sendEach(requests, maxConcurrency: 64) { index, result in
    ///     if case .success(let item) = result { store.save(item) }
    /// }
    /// ```
    ///
    /// `handle` runs in the calling task, one result at a time, in the order requests finish (not the input
    /// order). While it runs, the requests in flight carry on but no new one starts, so a slow handler slows
    /// the intake (back-pressure). Every request read from `requests` gets exactly one call.
    ///
    /// **Cancellation.** Cancelling the calling task cancels the requests in flight and stops the reading of
    /// `requests`: each request in flight still gets its call when it ends (usually with
    /// `.failure(CancellationError())`, or the response that beat the cancellation), nothing more is read,
    /// and the call returns. The requests never read get no call, so an endless input ends with its caller.
    /// A task already cancelled when it calls `sendEach` reads nothing and gets no call.
    ///
    /// - Parameters:
    ///   - requests: The requests; any sequence, read once, in order.
    ///   - maxConcurrency: The most requests in flight at once; must be at least 1.
    ///   - isolation: Where the input sequence is read and results are collected: the caller's isolation
    ///     (the default); leave it out.
    ///   - handle: Called with each request's position and result. If it throws, the requests in flight are
    ///     cancelled and awaited, no further request starts, and the error is rethrown.
    /// - Throws: Only what `handle` throws.
    public func sendEach<Response: Sendable, Failure: Error>(
        _ requests: some Sequence<Request<Response>>,
        maxConcurrency: Int,
        isolation: isolated (any Actor)? = #isolation,
        _ handle: (_ index: Int, _ result: Result<Response, any Error>) async throws(Failure) -> Void
    ) async throws(Failure) {
        try await FanOut.forEach(
            requests,
            maxConcurrency: maxConcurrency,
            isolation: isolation,
            operation: { request in try await self.send(request) },
            handle: handle
        )
    }

    /// Sends many `URLRequest`s, at most `maxConcurrency` at a time, and hands each result to `handle` as
    /// soon as it arrives, with the request's position in `requests`.
    ///
    /// ```swift
    /// try await client.sendEach(urls.lazy.map { URLRequest(url: $0) }, maxConcurrency: 32) { index, result in
    ///     let (data, _) = try result.get()
    ///     try sink.write(data)
    /// }
    /// ```
    ///
    /// Behaves like the typed `sendEach(_:maxConcurrency:_:)`, cancellation included: the requests in flight
    /// get their calls, nothing more is read, and the call returns.
    ///
    /// - Parameters:
    ///   - requests: The requests, each with an absolute URL.
    ///   - maxConcurrency: The most requests in flight at once; must be at least 1.
    ///   - isolation: Where the input sequence is read and results are collected: the caller's isolation
    ///     (the default); leave it out.
    ///   - handle: Called with each request's position and result, in the order requests finish.
    /// - Throws: Only what `handle` throws.
    public func sendEach<Failure: Error>(
        _ requests: some Sequence<URLRequest>,
        maxConcurrency: Int,
        isolation: isolated (any Actor)? = #isolation,
        _ handle: (_ index: Int, _ result: Result<(Data, HTTPURLResponse), any Error>) async throws(Failure) -> Void
    ) async throws(Failure) {
        try await FanOut.forEach(
            requests,
            maxConcurrency: maxConcurrency,
            isolation: isolation,
            operation: { request in try await self.send(request) },
            handle: handle
        )
    }
}
