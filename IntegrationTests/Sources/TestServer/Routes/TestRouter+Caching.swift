import HTTPTypes
import Hummingbird

extension TestRouter {
    /// The routes the caching tests talk to, per key (each counts its full and `304` answers):
    /// - `GET /cache/etag/:key`: `ETag` `"v<version>"` and `Cache-Control: no-cache` (or `max-age=<maxAge>` from
    ///   the query); a matching `If-None-Match` gets a `304`. `POST` to it changes the version.
    /// - `GET /cache/vary/:key`: `Vary: Accept-Language`, `max-age=600`; the body is the request's language.
    /// - `GET /cache/me/:key`: `public, max-age=600`; the body is the request's `Authorization` value.
    /// - `GET /cache/stats/:key`: the counts, never cacheable.
    static func addCachingRoutes(to router: Router<BasicRequestContext>, state: CachingState) {
        router.get("cache/etag/:key") { request, context in
            let key = try context.parameters.require("key")
            let tag = "\"v\(await state.version(key))\""
            var headers: HTTPFields = [.eTag: tag]
            if let maxAge = QueryItems(request.uri.query)["maxAge"].flatMap(Int.init) {
                headers[.cacheControl] = "max-age=\(maxAge)"
            } else {
                headers[.cacheControl] = "no-cache"
            }
            if request.headers[.ifNoneMatch] == tag {
                await state.countNotModified(key)
                return Response(status: .notModified, headers: headers)
            }
            await state.countFull(key)
            return Response.text(tag, headers: headers)
        }
        router.post("cache/etag/:key") { _, context in
            await state.change(try context.parameters.require("key"))
            return Response(status: .noContent)
        }
        router.get("cache/vary/:key") { request, context in
            await state.countFull(try context.parameters.require("key"))
            let language = request.headers[.acceptLanguage] ?? "none"
            let headers: HTTPFields = [.cacheControl: "max-age=600", .vary: "Accept-Language"]
            return Response.text(language, headers: headers)
        }
        router.get("cache/me/:key") { request, context in
            await state.countFull(try context.parameters.require("key"))
            let credential = request.headers[.authorization] ?? "anonymous"
            let headers: HTTPFields = [.cacheControl: "public, max-age=600"]
            return Response.text(credential, headers: headers)
        }
        router.get("cache/stats/:key") { _, context in
            try Response.json(await state.stats(try context.parameters.require("key")))
        }
    }
}
