import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Middleware {
    /// Installs a ``RequestBehavior`` (or a ``CombinedBehavior``) as a middleware.
    ///
    /// ```swift
    /// let client = Client(
    ///     baseURL: URL(string: "https://api.example.com")!,
    ///     middleware: [.behavior(CombinedBehavior(RequestIDBehavior(), ActivityIndicator(activity: tracker)))]
    /// )
    /// ```
    ///
    /// See ``RequestBehavior`` for the order of the hooks, and ``CombinedBehavior`` for how several
    /// behaviors interleave. Errors (including a `beforeSend` error) and cancellation are passed on
    /// unchanged after the hooks ran.
    ///
    /// - Returns: A middleware named `"behavior"`.
    public static func behavior(_ behavior: some RequestBehavior) -> Middleware {
        let behaviors = (behavior as? CombinedBehavior)?.behaviors ?? [behavior]
        let name = "behavior"
        if behaviors.isEmpty || behaviors.allSatisfy({ $0 is EmptyBehavior }) {
            return Middleware(name: name) { request, next in try await next(request) }
        }
        if behaviors.count == 1 {
            let only = behaviors[0]
            return Middleware(name: name) { request, next in
                try await BehaviorRunner.run(only, request: request, next: next)
            }
        }
        return Middleware(name: name) { request, next in
            try await BehaviorRunner.run(behaviors, request: request, next: next)
        }
    }
}

private enum BehaviorRunner {
    static func run(
        _ behavior: any RequestBehavior,
        request: URLRequest,
        next: Next
    ) async throws -> (Data, HTTPURLResponse) {
        var request = request
        let result: (Data, HTTPURLResponse)
        do {
            try await prepare(&request, with: behavior)
            result = try await next(request)
        } catch {
            await finish(behavior, error: error, request: request)
            throw error
        }
        await behavior.afterSuccess(result.1, data: result.0, for: request)
        return result
    }

    static func run(
        _ behaviors: [any RequestBehavior],
        request: URLRequest,
        next: Next
    ) async throws -> (Data, HTTPURLResponse) {
        var request = request
        var started = 0
        let result: (Data, HTTPURLResponse)
        do {
            for behavior in behaviors {
                started += 1
                try await prepare(&request, with: behavior)
            }
            result = try await next(request)
        } catch {
            for behavior in behaviors[..<started].reversed() {
                await finish(behavior, error: error, request: request)
            }
            throw error
        }
        for behavior in behaviors.reversed() {
            await behavior.afterSuccess(result.1, data: result.0, for: request)
        }
        return result
    }

    private static func prepare(_ request: inout URLRequest, with behavior: any RequestBehavior) async throws {
        let headers = behavior.additionalHeaders
        if !headers.isEmpty {
            let patch = try HeaderPatch(headers, request: request)
            patch.apply(to: &request)
            // A credential among them is one a cache or coalescing layer listed outside cannot see.
            if patch.containsCredential { CredentialWitness.current?.record() }
        }
        try await behavior.beforeSend(&request)
    }

    private static func finish(_ behavior: any RequestBehavior, error: any Error, request: URLRequest) async {
        // A timeout above that cancelled the request at its deadline is a failure (timedOut), as it is when the
        // timeout sits below: only a caller that went away is a cancellation.
        let error = Deadline.seenBelow(error, request: request)
        if error is CancellationError {
            await behavior.afterCancellation(for: request)
        } else {
            await behavior.afterFailure(error, for: request)
        }
    }
}
