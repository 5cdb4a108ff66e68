import Foundation
import HTTPTypes
import Hummingbird

extension TestRouter {
    /// The redirect statuses `/redirect/:code` and `/redirect-chain/:n?code=` accept.
    static let redirectCodes: Set<Int> = [301, 302, 303, 307, 308]

    /// The longest chain `/redirect-chain/:n` builds.
    static let maximumChain = 100

    /// `/redirect/:code`, `/redirect-chain/:n` and `/redirect-loop`.
    static func addRedirectRoutes(to router: Router<BasicRequestContext>, state: ServerState) {
        for method in Self.allMethods {
            router.on("redirect/:code", method: method) { request, context in
                try await Self.redirect(request, context: context, state: state)
            }
            router.on("redirect-chain/:n", method: method) { request, context in
                try await Self.redirectChain(request, context: context, state: state)
            }
            router.on("redirect-loop", method: method) { request, _ in
                try await Self.redirectLoop(request, state: state)
            }
        }
    }

    /// `?to=` is a path on this origin (sent as a relative `Location`) or an absolute
    /// `http://127.0.0.1:PORT/…` URL; default `/echo`. `?peer=1` puts a path on the other origin.
    private static func redirect(
        _ request: Request,
        context: BasicRequestContext,
        state: ServerState
    ) async throws -> Response {
        guard let code = context.parameters.get("code", as: Int.self), Self.redirectCodes.contains(code) else {
            return Response.badRequest("code must be one of \(Self.redirectCodes.sorted())")
        }
        let query = QueryItems(request.uri.query)
        var target = query["to"] ?? "/echo"
        if query["peer"] == "1" {
            guard target.hasPrefix("/"), let peer = await state.peer else {
                return Response.badRequest("peer=1 needs a peer and a path in to=")
            }
            target = Self.join(peer, target)
        }
        guard let location = RedirectTarget.location(for: target) else {
            return Response.badRequest("to must be a path or an http://127.0.0.1 URL")
        }
        return Self.redirectResponse(code: code, location: location)
    }

    /// `n` redirects, then `/echo`: `/redirect-chain/3` → `/redirect-chain/2` → `/redirect-chain/1`
    /// → `/echo`; `/redirect-chain/0` answers like `/echo` at once. `?code=` picks the status
    /// (default 302); `?alternate=1` sends every hop to the other origin. The query is kept on
    /// every hop, so `/echo` shows it at the end.
    private static func redirectChain(
        _ request: Request,
        context: BasicRequestContext,
        state: ServerState
    ) async throws -> Response {
        guard let hops = context.parameters.get("n", as: Int.self), (0...Self.maximumChain).contains(hops) else {
            return Response.badRequest("n must be 0...\(Self.maximumChain)")
        }
        let query = QueryItems(request.uri.query)
        guard let code = Int(query["code"] ?? "302"), Self.redirectCodes.contains(code) else {
            return Response.badRequest("code must be one of \(Self.redirectCodes.sorted())")
        }
        if hops == 0 {
            return try await Self.echo(request, state: state)
        }
        let suffix = request.uri.query.map { "?\($0)" } ?? ""
        var location = hops == 1 ? "/echo\(suffix)" : "/redirect-chain/\(hops - 1)\(suffix)"
        if query["alternate"] == "1" {
            guard let peer = await state.peer else { return Response.badRequest("alternate=1 needs a peer") }
            location = Self.join(peer, location)
        }
        return Self.redirectResponse(code: code, location: location)
    }

    /// Redirects (302) to the other origin's `/redirect-loop`, which redirects back: A → B → A → …
    /// Without a peer it redirects to itself. The query is kept.
    private static func redirectLoop(_ request: Request, state: ServerState) async throws -> Response {
        let path = "/redirect-loop" + (request.uri.query.map { "?\($0)" } ?? "")
        let location = await state.peer.map { Self.join($0, path) } ?? path
        return Self.redirectResponse(code: 302, location: location)
    }

    private static func redirectResponse(code: Int, location: String) -> Response {
        var headers = HTTPFields()
        headers[.location] = location
        return Response.text("Redirecting to \(location)", status: HTTPResponse.Status(code: code), headers: headers)
    }

    /// `origin` (no trailing slash) followed by `path` (which starts with `/`).
    private static func join(_ origin: URL, _ path: String) -> String {
        var base = origin.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        return base + path
    }
}
