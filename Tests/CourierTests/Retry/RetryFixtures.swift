import Courier
import CourierTesting
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Helpers shared by the retry and timeout suites.
enum RetryFixtures {
    static let baseURL = URL(string: "https://api.example.test")!

    /// A request for `/items` with `method`.
    static func request(_ method: String = "GET", headers: [String: String] = [:]) -> URLRequest {
        var request = URLRequest(url: baseURL.appendingPathComponent("items"))
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    /// A policy with no budget, no jitter and no waiting unless a test says otherwise.
    static func policy(
        attempts: Int = 3,
        backoff: RetryPolicy.Backoff = .immediate,
        onRetry: (@Sendable (RetryEvent) -> Void)? = nil
    ) -> RetryPolicy {
        RetryPolicy(maximumAttempts: attempts, backoff: backoff, budget: nil, onRetry: onRetry)
    }

    /// Records `RetryContext.attempt` for every request that passes.
    static func recordingAttempts(into log: Locked<[Int]>) -> Middleware {
        Middleware { request, next in
            log.withLock { $0.append(RetryContext.attempt) }
            return try await next(request)
        }
    }
}
