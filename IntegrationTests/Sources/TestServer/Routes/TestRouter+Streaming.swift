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
///   ``maximumWaitMilliseconds``), until the client closes the connection.
/// - `GET /stream/bytes/:count` → `count` bytes (up to 16 GiB) of ``TestServers/largeBodyByte(at:)``, with a
///   `Content-Length`, generated while they are written: the server holds one 62.75 KiB chunk whatever the
///   length. It waits for the client like any body writer, so a client that reads slowly slows it.
/// - `GET /stream/events` → a `text/event-stream` that a reconnecting client reads whole over three connections:
///   without `Last-Event-ID`, event `1` (`one`, with `retry: 10`) and event `2` (`two`), then the server closes the
///   connection; with `Last-Event-ID: 2`, event `3` (`three`), then it closes again; with `Last-Event-ID: 3`,
///   `204 No Content`. Any other `Last-Event-ID` is a `400`.
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

        router.get("stream/events") { request, _ in
            let wire: String
            switch request.headers[HTTPField.Name("Last-Event-ID")!] {
            case nil: wire = "retry: 10\nid: 1\ndata: one\n\nid: 2\ndata: two\n\n"
            case "2": wire = "id: 3\ndata: three\n\n"
            case "3": return Response(status: .noContent)
            default: return Response.badRequest("unexpected Last-Event-ID")
            }
            var headers = HTTPFields()
            headers[.contentType] = "text/event-stream"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: wire)))
        }

        router.get("stream/drip") { request, _ in
            let query = QueryItems(request.uri.query)
            guard let interval = Self.milliseconds(query["everyMs"], default: 100), interval > 0 else {
                return Response.badRequest("everyMs must be 1...\(maximumWaitMilliseconds)")
            }
            let key = query["key"]
            var headers = HTTPFields()
            headers[.contentType] = "text/plain"
            let body = ResponseBody { writer in
                try await Self.counted(key, state: state) {
                    let tick = ByteBuffer(string: "tick\n")
                    while true {
                        try await writer.write(tick)
                        try await Task.sleep(for: .milliseconds(interval))
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

    /// Waits until `key` has been hit once, or ``maximumWaitMilliseconds``; throws (ending the body) after that.
    private static func waitForHit(_ key: String, state: ServerState) async throws {
        let waiter = Task { await state.waitUntil(key) { $0.hits >= 1 } }
        let timeout = Task {
            try await Task.sleep(for: .milliseconds(maximumWaitMilliseconds))
            waiter.cancel()
        }
        let snapshot = await waiter.value
        timeout.cancel()
        guard snapshot.hits >= 1 else { throw CancellationError() }
    }
}
