import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Streaming routes: bodies written over time, or longer than the server could hold.
///
/// - `GET /stream/lines/:count` → `count` JSON lines (`{"index":N}\n`, N from 0), one write each, without a
///   `Content-Length`, as `application/x-ndjson`. With `?gate=K` the server writes the first line, then waits
///   until the counter `hits` of `K` reaches 1 (a test hits `/hit/K` once it has read that line; at most
///   ``maximumWaitMilliseconds``, then it answers nothing more) before the rest.
/// - `GET /stream/drip?everyMs=MS` → `tick\n` at once and then every MS milliseconds (default 100, at most
///   ``maximumWaitMilliseconds``), until the client closes the connection. With `?gate=K` the server writes the
///   first tick, then writes nothing until the counter `hits` of `K` reaches 1 (a test hits `/hit/K` once it has
///   seen what a stalled body does; at most ``maximumGateMilliseconds``, then it drops the connection) and
///   ticks on after that: a stall as long as the test needs, whatever the machine's scheduler does.
/// - `GET /stream/bytes/:count` → `count` bytes (up to 16 GiB) of ``TestServers/largeBodyByte(at:)``, with a
///   `Content-Length`, generated while they are written: the server holds one 62.75 KiB chunk whatever the
///   length. It waits for the client like any body writer, so a client that reads slowly slows it.
/// - `GET /stream/events` → a `text/event-stream` that a reconnecting client reads whole over three connections:
///   without `Last-Event-ID`, event `1` (`one`, with `retry: 10`) and event `2` (`two`), then the server closes the
///   connection; with `Last-Event-ID: 2`, event `3` (`three`), then it closes again; with `Last-Event-ID: 3`,
///   `204 No Content`. Any other `Last-Event-ID` is a `400`.
/// - `GET /stream/cut-events` → like `/stream/events`, but the first connection is cut in the middle of an event:
///   without `Last-Event-ID`, event `1` (`one`) and the first half of event `2`, then the server drops the connection
///   (the chunked body never ends); with `Last-Event-ID: 1`, events `2` (`two`) and `3` (`three`), then the end of
///   the body; with `Last-Event-ID: 3`, `204 No Content`; any other is a `400`.
/// - `GET /stream/auth-events/:realm?streams=N` → the same kind of stream for `N` clients at once, behind the
///   realm's bearer token (see `/auth/:realm/…`): a request without the current, unexpired token answers `401` with
///   `WWW-Authenticate: Bearer …` and counts a hit of the counter key `REALM.rejected`. Without `Last-Event-ID`:
///   events `1` (`one`) and `2` (`two`), then it counts a hit of `REALM.first` and holds the connection open until
///   all `N` streams have had theirs; the `N`th expires the realm's token (as `POST /auth/:realm/expire` does,
///   counting a hit of `REALM.expired`) before any of them ends, so that every stream reconnects with an expired
///   token. With `Last-Event-ID: 2`, events `3` (`three`) and `4` (`four`), then the end of the body; with
///   `Last-Event-ID: 4`, `204 No Content`; any other is a `400`.
///
/// With `?key=K`, `/stream/drip` and `/stream/bytes` count as open streams in the counters `hanging` (open
/// now) and `hangsEnded` (ended, by the end of the body or by the client closing the connection).
extension TestRouter {
    static func addStreamingRoutes(to router: Router<BasicRequestContext>, state: ServerState) {
        router.get("stream/lines/:count") { request, context in
            guard let count = context.parameters.get("count", as: Int.self), (1...100_000).contains(count) else {
                return Response.badRequest("count must be 1...100000")
            }
            let gate = QueryItems(request.uri.query)["gate"]
            var headers = HTTPFields()
            headers[.contentType] = "application/x-ndjson"
            let body = ResponseBody { writer in
                for index in 0..<count {
                    try await writer.write(ByteBuffer(string: "{\"index\":\(index)}\n"))
                    if index == 0, let gate {
                        try await Self.waitForHit(gate, state: state)
                    }
                }
                try await writer.finish(nil)
            }
            return Response(status: .ok, headers: headers, body: body)
        }

        router.get("stream/cut-events") { request, _ in
            let cut = ResponseBody { writer in
                try await writer.write(ByteBuffer(string: "id: 1\ndata: one\n\nid: 2\ndata: tw"))
                throw CutStream()
            }
            return Self.eventBatch(
                request,
                ["": cut, "1": .events("id: 2\ndata: two\n\nid: 3\ndata: three\n\n")],
                endAt: "3"
            )
        }

        router.get("stream/events") { request, _ in
            Self.eventBatch(
                request,
                [
                    "": .events("retry: 10\nid: 1\ndata: one\n\nid: 2\ndata: two\n\n"),
                    "2": .events("id: 3\ndata: three\n\n"),
                ],
                endAt: "3"
            )
        }

        router.get("stream/auth-events/:realm") { request, context in
            try await Self.authenticatedEvents(request, realm: try context.parameters.require("realm"), state: state)
        }

        router.get("stream/drip") { request, _ in
            let query = QueryItems(request.uri.query)
            guard let interval = Self.milliseconds(query["everyMs"], default: 100), interval > 0 else {
                return Response.badRequest("everyMs must be 1...\(maximumWaitMilliseconds)")
            }
            let key = query["key"]
            let gate = query["gate"]
            var headers = HTTPFields()
            headers[.contentType] = "text/plain"
            let body = ResponseBody { writer in
                try await Self.counted(key, state: state) {
                    let tick = ByteBuffer(string: "tick\n")
                    try await writer.write(tick)
                    if let gate {
                        try await Self.waitForHit(gate, state: state, milliseconds: maximumGateMilliseconds)
                    }
                    while true {
                        try await Task.sleep(for: .milliseconds(interval))
                        try await writer.write(tick)
                    }
                }
            }
            return Response(status: .ok, headers: headers, body: body)
        }

        router.get("stream/bytes/:count") { request, context in
            guard let count = context.parameters.get("count", as: Int.self), (0...maximumStreamedBody).contains(count)
            else {
                return Response.badRequest("count must be 0...\(maximumStreamedBody)")
            }
            let key = QueryItems(request.uri.query)["key"]
            var headers = HTTPFields()
            headers[.contentType] = "application/octet-stream"
            let body = ResponseBody(contentLength: count) { writer in
                try await Self.counted(key, state: state) {
                    var offset = 0
                    while offset < count {
                        // A whole number of the pattern's periods: every chunk is the same buffer, shared.
                        let length = min(streamedChunk.readableBytes, count - offset)
                        try await writer.write(streamedChunk.getSlice(at: 0, length: length)!)
                        offset += length
                    }
                    try await writer.finish(nil)
                }
            }
            return Response(status: .ok, headers: headers, body: body)
        }
    }

    /// `/stream/auth-events/:realm`: see the list of routes above.
    private static func authenticatedEvents(
        _ request: Request,
        realm: String,
        state: ServerState
    ) async throws -> Response {
        guard let streams = QueryItems(request.uri.query)["streams"].flatMap({ Int($0) }),
            (1...10_000).contains(streams)
        else {
            return Response.badRequest("streams must be 1...10000")
        }
        if await state.checkToken(Self.bearerToken(request.headers[.authorization]), realm: realm) != nil {
            await state.hit("\(realm).rejected")
            var headers = HTTPFields()
            headers[.wwwAuthenticate] = #"Bearer realm="\#(realm)", error="invalid_token""#
            return try Response.json(
                ErrorResponse(reason: "Invalid or expired token."),
                status: .unauthorized,
                headers: headers
            )
        }
        let first = ResponseBody { writer in
            try await writer.write(ByteBuffer(string: "id: 1\ndata: one\n\nid: 2\ndata: two\n\n"))
            if await state.hit("\(realm).first").hits == streams {
                _ = await state.expireToken(realm: realm)
                await state.hit("\(realm).expired")
            }
            // Released by the last stream's hit above, or by the server shutting down.
            _ = await state.waitUntil("\(realm).expired") { $0.hits >= 1 }
            try await writer.finish(nil)
        }
        return Self.eventBatch(
            request,
            ["": first, "2": .events("id: 3\ndata: three\n\nid: 4\ndata: four\n\n")],
            endAt: "4"
        )
    }

    /// The answer of an event stream served in batches by the `Last-Event-ID` it receives: the batch of that ID
    /// (of `""` for a request without one) as `text/event-stream`, `204 No Content` for `endID`, `400` for any other.
    private static func eventBatch(
        _ request: Request,
        _ batches: [String: ResponseBody],
        endAt endID: String
    ) -> Response {
        let lastEventID = request.headers[HTTPField.Name("Last-Event-ID")!] ?? ""
        if lastEventID == endID { return Response(status: .noContent) }
        guard let body = batches[lastEventID] else { return Response.badRequest("unexpected Last-Event-ID") }
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        return Response(status: .ok, headers: headers, body: body)
    }

    /// The longest body `/stream/bytes/:count` sends: 16 GiB.
    static let maximumStreamedBody = 16 << 30

    /// 256 periods of ``TestServers/largeBodyByte(at:)`` (64,256 bytes), so that it can be written again and again.
    static let streamedChunk: ByteBuffer = {
        var buffer = ByteBuffer()
        let period = 251
        for index in 0..<(period * 256) {
            buffer.writeInteger(TestServers.largeBodyByte(at: index))
        }
        return buffer
    }()

    /// Runs `body` as one open stream of `key` (when there is a key): counted in `hanging` while it runs, and in
    /// `hangsEnded` once it ends, however it ends.
    private static func counted(_ key: String?, state: ServerState, _ body: () async throws -> Void) async throws {
        guard let key else { return try await body() }
        await state.hangStarted(key)
        do {
            try await body()
        } catch {
            await state.hangEnded(key)
            throw error
        }
        await state.hangEnded(key)
    }

    /// How long `/stream/drip?gate=K` waits for its gate: long enough for a test on a starved machine, short
    /// enough that a test that never opens it does not keep a stream open for the rest of the run.
    static let maximumGateMilliseconds = 120_000

    /// Waits until `key` has been hit once, or `milliseconds`; throws (ending the body) after that.
    static func waitForHit(
        _ key: String,
        state: ServerState,
        milliseconds: Int = maximumWaitMilliseconds
    ) async throws {
        let waiter = Task { await state.waitUntil(key) { $0.hits >= 1 } }
        let timeout = Task {
            try await Task.sleep(for: .milliseconds(milliseconds))
            waiter.cancel()
        }
        let snapshot = await waiter.value
        timeout.cancel()
        guard snapshot.hits >= 1 else { throw CancellationError() }
    }
}

/// Thrown by `/stream/cut-events`'s body writer to make Hummingbird drop the connection mid-body.
private struct CutStream: Error {}

extension ResponseBody {
    /// A body of `wire`, the text of some Server-Sent Events.
    static func events(_ wire: String) -> ResponseBody {
        ResponseBody(byteBuffer: ByteBuffer(string: wire))
    }
}
