import HTTPTypes
import Hummingbird

extension TestRouter {
    /// `/count/:key`, `/wait/:key`, `/hit/:key` and `/reset`; none of them is counted.
    static func addCounterRoutes(to router: Router<BasicRequestContext>, state: ServerState) {
        router.get("count/:key") { _, context in
            try Response.json(await state.snapshot(try context.parameters.require("key")))
        }

        router.get("wait/:key") { request, context in
            try await Self.wait(key: context.parameters.require("key"), QueryItems(request.uri.query), state: state)
        }

        for method in Self.allMethods {
            router.on("hit/:key", method: method) { _, context in
                try Response.json(await state.hit(try context.parameters.require("key")))
            }
        }

        router.post("reset") { _, _ in
            await state.reset()
            return Response(status: .noContent)
        }
    }

    /// Long-polls until every counter named in the query has reached the given value.
    ///
    /// `GET /wait/KEY?hits=2&hangsEnded=1&timeoutMs=3000` answers 200 with the counters once
    /// `hits >= 2` and `hangsEnded >= 1`, or 408 with the counters as they were when `timeoutMs`
    /// (default 5000, at most 60000) ran out or the server began to shut down. Its `X-Wait-Ended` header
    /// says which: `met`, `timeout` or `shutdown`.
    /// The longest a `/wait/:key` long poll may be asked to wait.
    static let maximumLongPollMilliseconds = 60_000

    /// The header that says why a long poll ended.
    static var waitEndedHeader: HTTPField.Name { HTTPField.Name("X-Wait-Ended")! }

    private static func wait(key: String, _ query: QueryItems, state: ServerState) async throws -> Response {
        typealias Counter = @Sendable (CounterSnapshot) -> Int
        var minimums: [(counter: Counter, value: Int)] = []
        let counters: [(String, Counter)] = [
            ("hits", { $0.hits }), ("flakyAttempts", { $0.flakyAttempts }),
            ("hanging", { $0.hanging }), ("hangsEnded", { $0.hangsEnded }), ("waiting", { $0.waiting }),
        ]
        for (name, counter) in counters {
            guard let text = query[name] else { continue }
            guard let value = Int(text) else { return Response.badRequest("\(name) must be a whole number") }
            minimums.append((counter, value))
        }
        let timeout: Int
        if let text = query["timeoutMs"] {
            guard let value = Int(text), (0...Self.maximumLongPollMilliseconds).contains(value) else {
                return Response.badRequest("timeoutMs must be 0...\(maximumLongPollMilliseconds)")
            }
            timeout = value
        } else {
            timeout = Self.maximumWaitMilliseconds
        }
        let frozen = minimums
        let condition: @Sendable (CounterSnapshot) -> Bool = { snapshot in
            frozen.allSatisfy { $0.counter(snapshot) >= $0.value }
        }
        let snapshot = await withTaskGroup(of: CounterSnapshot?.self) { group in
            group.addTask { await state.waitUntil(key, condition) }
            group.addTask {
                try? await Task.sleep(for: .milliseconds(timeout))
                return nil
            }
            // Whichever ends first wins; cancelling the other ends it promptly.
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        let final = await state.snapshot(key)
        let met = snapshot.map(condition) ?? false
        let ended = met ? "met" : snapshot == nil ? "timeout" : "shutdown"
        return try Response.json(
            final,
            status: met ? .ok : .requestTimeout,
            headers: [Self.waitEndedHeader: ended]
        )
    }
}

/// Counts every request that names a key with `?countKey=KEY` or an `X-Count-Key: KEY` header.
struct CountingMiddleware<Context: RequestContext>: RouterMiddleware {
    let state: ServerState

    static var headerName: HTTPField.Name { HTTPField.Name("X-Count-Key")! }

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        if let key = request.headers[Self.headerName] ?? QueryItems(request.uri.query)["countKey"] {
            await self.state.hit(key)
        }
        return try await next(request, context)
    }
}
