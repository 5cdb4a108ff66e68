import Courier
import CourierTesting
import Foundation
import Synchronization

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

/// A reproducible source of numbers in `0..<1` (SplitMix64), for jitter.
final class SeededRandom: Sendable {
    private let state: Mutex<UInt64>

    init(seed: UInt64) {
        state = Mutex(seed)
    }

    func next() -> Double {
        let bits = state.withLock { state -> UInt64 in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        return Double(bits >> 11) / Double(1 << 53)
    }
}
