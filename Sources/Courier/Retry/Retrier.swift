import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The retry loop, built once per middleware.
struct Retrier<C: Clock<Duration>>: Sendable {
    private enum Failure {
        case response(Data, HTTPURLResponse)
        case error(any Error)
    }

    private enum Decision {
        case giveUp
        /// Everything says retry, but the body cannot be sent again.
        case cannotReplay
        case retry(RetryEvent)
    }

    let policy: RetryPolicy
    let clock: C

    func send(_ request: URLRequest, next: Next) async throws -> (Data, HTTPURLResponse) {
        // A policy that resends non-idempotent requests without a key of their own: every attempt is the same call,
        // so a key layer inside gives each the key it gave the first.
        guard policy.retriesNonIdempotentRequests else { return try await attempts(request, next: next) }
        return try await IdempotencyKeyMemory.remembering(for: request) { try await attempts(request, next: next) }
    }

    private func attempts(_ request: URLRequest, next: Next) async throws -> (Data, HTTPURLResponse) {
        var request = request
        policy.budget?.recordRequest()
        // For the story the final error tells (`CourierError.attempts`, `elapsed`); one clock read per call.
        let start = clock.now
        var attempt = 1
        while true {
            let failure: Failure
            do {
                let context = RetryContext(attempt: attempt, maximumAttempts: policy.maximumAttempts)
                let (data, response) = try await RetryContext.$current.withValue(context) {
                    try await next(request)
                }
                guard policy.retryableStatuses.contains(response.statusCode) else { return (data, response) }
                failure = .response(data, response)
            } catch {
                failure = .error(error)
            }
            switch decide(after: failure, attempt: attempt, request: request) {
            case .giveUp:
                switch failure {
                case .response(let data, let response): return (data, response)
                case .error(let error): throw telling(error, attempts: attempt, since: start)
                }
            case .cannotReplay:
                switch failure {
                case .response(let data, let response):
                    throw Replay.refusal(
                        request,
                        for: "retry after a \(response.statusCode)",
                        response: response,
                        body: data
                    ).telling(attempts: attempt, elapsed: start.duration(to: clock.now))
                case .error(let error):
                    throw Replay.refusal(request, for: "retry after an error", underlying: error)
                        .telling(attempts: attempt, elapsed: start.duration(to: clock.now))
                }
            case .retry(let event):
                policy.onRetry?(event)
                do {
                    if event.delay > .zero { try await clock.sleep(for: event.delay) }
                    // Also after a backoff that ended normally (a clock that does not stop its sleep when cancelled):
                    // a caller that went away gets nothing more sent for it, whatever the transport does.
                    try Task.checkCancellation()
                } catch {
                    // Cancelled while it waited: the retry is not sent, and its token goes back to the budget.
                    policy.budget?.returnRetry()
                    throw error
                }
                let record = CallRecord.current
                if event.delay > .zero { record?.addBackoff(event.delay) }
                record?.recordAttempt(attempt + 1)
                // `decide` has checked that the body can be sent again; a streamed one is made afresh.
                request = Replay.fresh(request)
                attempt += 1
            }
        }
    }

    /// The error the call ends with: a ``CourierError`` tells how many attempts the call made and how long it
    /// ran (its message stays the last attempt's cause); any other error is passed on as it is.
    private func telling(_ error: any Error, attempts: Int, since start: C.Instant) -> any Error {
        guard let error = error as? CourierError else { return error }
        return error.telling(attempts: attempts, elapsed: start.duration(to: clock.now))
    }

    private func decide(after failure: Failure, attempt: Int, request: URLRequest) -> Decision {
        guard !Task.isCancelled, attempt < policy.maximumAttempts else { return .giveUp }
        let status: Int?
        let retryAfterValue: String?
        switch failure {
        case .response(_, let response):
            status = response.statusCode
            retryAfterValue = response.value(forHTTPHeaderField: "Retry-After")
        case .error(let error as CourierError) where error.code == .unacceptableStatus:
            guard let code = error.statusCode, policy.retryableStatuses.contains(code) else { return .giveUp }
            status = code
            retryAfterValue = error.responseHeaders.first { $0.key.lowercased() == "retry-after" }?.value
        case .error(let error):
            guard !(error is CancellationError), policy.isRetryable(error) else { return .giveUp }
            status = nil
            retryAfterValue = nil
        }
        guard policy.allowsSendingAgain(method: request.httpMethod, header: { request.value(forHTTPHeaderField: $0) })
        else { return .giveUp }

        var delay: Duration
        var retryAfter: Duration?
        if let status, status == 429 || status == 503, let retryAfterValue,
            let requested = RetryAfter.delay(retryAfterValue, now: policy.currentDate())
        {
            // The server said when to come back; more than the cap means "not worth waiting for".
            guard requested <= policy.maximumRetryAfter else { return .giveUp }
            delay = requested
            retryAfter = requested
        } else {
            delay = policy.backoff.delay(forRetry: attempt, random: policy.random())
            retryAfter = nil
        }
        if let deadline = Deadline.current {
            // Sleeping until (or past) the deadline would only end in a timeout: stop with what we have.
            guard delay < deadline.timeLeft else { return .giveUp }
        }
        if let budget = policy.budget, !budget.withdrawForRetry() { return .giveUp }
        // Last: a call that would not be retried anyway (a `Retry-After` past the cap, no time or budget left)
        // ends with its response or error, not with the refusal to send its body again.
        guard Replay.isReplayable(request) else {
            policy.budget?.returnRetry()
            return .cannotReplay
        }
        delay = max(delay, .zero)
        let reason: RetryEvent.Reason
        switch failure {
        case .response(_, let response): reason = .status(response.statusCode)
        case .error(let error): reason = status.map { .status($0) } ?? .error(error)
        }
        return .retry(
            RetryEvent(
                attempt: attempt + 1,
                maximumAttempts: policy.maximumAttempts,
                delay: delay,
                retryAfter: retryAfter,
                reason: reason,
                request: request
            )
        )
    }
}
