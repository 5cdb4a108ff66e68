import HTTPTypes
import Hummingbird

extension TestRouter {
    /// `/ratelimited/:key`, `/throttled/:key` and their control routes, on windows of their own
    /// (``RateLimitWindows``) that only the test moves on.
    ///
    /// - `GET /ratelimited/:key?limit=50&style=ietf|x&window=60` allows `limit` requests per window and
    ///   answers `429` (with `Retry-After`) beyond. It sends the IETF fields
    ///   (`RateLimit: "default";r=…;t=…` and `RateLimit-Policy: "default";q=…;w=…`) or, with `style=x`,
    ///   `X-RateLimit-Limit/-Remaining/-Reset`. The reset it announces is always the whole `window` (60
    ///   seconds by default): the window's time stands still until the test moves it on.
    /// - `POST /ratelimited/:key/advance` starts the next window; `GET /ratelimited/:key/stats` reports
    ///   ``RateLimitStats``.
    /// - `GET /throttled/:key?retryAfter=30` answers only `429` with `Retry-After` (no other field) until
    ///   `POST /throttled/:key/open`, then `200`. Its counts are in `/ratelimited/:key/stats` too.
    static func addRateLimitRoutes(to router: Router<BasicRequestContext>) {
        let windows = RateLimitWindows()
        router.get("ratelimited/:key") { request, context in
            let key = try context.parameters.require("key")
            let query = QueryItems(request.uri.query)
            guard let limit = Int(query["limit"] ?? "50"), limit > 0,
                let window = Int(query["window"] ?? "60"), window > 0
            else {
                return Response.badRequest("limit and window must be positive whole numbers")
            }
            let remaining = await windows.take(key, limit: limit)
            var headers = HTTPFields()
            if query["style"] == "x" {
                headers[HTTPField.Name("X-RateLimit-Limit")!] = "\(limit)"
                headers[HTTPField.Name("X-RateLimit-Remaining")!] = "\(remaining ?? 0)"
                headers[HTTPField.Name("X-RateLimit-Reset")!] = "\(window)"
            } else {
                headers[HTTPField.Name("RateLimit")!] = "\"default\";r=\(remaining ?? 0);t=\(window)"
                headers[HTTPField.Name("RateLimit-Policy")!] = "\"default\";q=\(limit);w=\(window)"
            }
            guard remaining != nil else {
                headers[.retryAfter] = "\(window)"
                return Response.text("Too many requests", status: .tooManyRequests, headers: headers)
            }
            return Response.text("ok", headers: headers)
        }

        router.post("ratelimited/:key/advance") { _, context in
            try Response.json(await windows.advance(try context.parameters.require("key")))
        }

        router.get("ratelimited/:key/stats") { _, context in
            try Response.json(await windows.stats(try context.parameters.require("key")))
        }

        router.get("throttled/:key") { request, context in
            let key = try context.parameters.require("key")
            guard let retryAfter = Int(QueryItems(request.uri.query)["retryAfter"] ?? "30"), retryAfter >= 0 else {
                return Response.badRequest("retryAfter must be a whole number of seconds")
            }
            guard await windows.admitThrottled(key) else {
                var headers = HTTPFields()
                headers[.retryAfter] = "\(retryAfter)"
                return Response.text("Too many requests", status: .tooManyRequests, headers: headers)
            }
            return Response.text("ok")
        }

        router.post("throttled/:key/open") { _, context in
            await windows.open(try context.parameters.require("key"))
            return Response(status: .noContent)
        }
    }
}
