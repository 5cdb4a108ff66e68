import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension TestRouter {
    /// `/status/:code`, `/delay/:ms`, `/hang`, `/truncated` and `/flaky/:key`.
    static func addFaultRoutes(to router: Router<BasicRequestContext>, state: ServerState) {
        for method in Self.allMethods {
            router.on("status/:code", method: method) { request, context in
                Self.status(request, context: context)
            }
        }

        router.get("delay/:ms") { _, context in
            guard let ms = Self.milliseconds(context.parameters.get("ms")) else {
                return Response.badRequest("ms must be 0...\(maximumWaitMilliseconds)")
            }
            try await Task.sleep(for: .milliseconds(ms))
            return try Response.json(["delayedMs": ms])
        }

        router.get("hang") { request, _ in
            try await Self.hang(request, state: state)
        }

        router.get("truncated") { request, _ in
            Self.truncated(request)
        }

        for method in Self.allMethods {
            router.on("flaky/:key", method: method) { request, context in
                let key = try context.parameters.require("key")
                return try await Self.flaky(key: key, QueryItems(request.uri.query), state: state)
            }
        }
    }

    private static func status(_ request: Request, context: BasicRequestContext) -> Response {
        guard let code = context.parameters.get("code", as: Int.self), (200...599).contains(code) else {
            return Response.badRequest("code must be 200...599")
        }
        let query = QueryItems(request.uri.query)
        var headers = HTTPFields()
        for header in query.all("header") {
            let parts = header.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let name = HTTPField.Name(String(parts[0]).trimmingCharacters(in: .whitespaces))
            else {
                return Response.badRequest("header must be name:value")
            }
            headers.append(HTTPField(name: name, value: String(parts[1]).trimmingCharacters(in: .whitespaces)))
        }
        let status = HTTPResponse.Status(code: code)
        if code == 204 || code == 304 {
            return Response(status: status, headers: headers)
        }
        if let body = query["body"] {
            return Response.text(body, status: status, headers: headers)
        }
        return (try? Response.json(["status": code], status: status, headers: headers)) ?? Response(status: status)
    }

    /// Waits until the client closes the connection or the server shuts down.
    ///
    /// The hang is counted under `?key=` so a test can wait (with `/wait/:key?hanging=1`) until the
    /// request has arrived, and (with `?hangsEnded=1`) until the server has seen the client go.
    private static func hang(_ request: Request, state: ServerState) async throws -> Response {
        let key = QueryItems(request.uri.query)["key"]
        if let key { await state.hangStarted(key) }
        do {
            try await request.body.consumeWithCancellationOnInboundClose { _ in
                await state.waitForShutdown()
            }
        } catch {
            if let key { await state.hangEnded(key) }
            throw error
        }
        if let key { await state.hangEnded(key) }
        return Response.text("The server is shutting down.", status: .serviceUnavailable)
    }

    /// Declares `Content-Length: declared` (default 1000), sends `sent` bytes (default 100) and
    /// closes the connection: the body writer throws, and Hummingbird closes a channel whose
    /// response failed mid-body.
    private static func truncated(_ request: Request) -> Response {
        let query = QueryItems(request.uri.query)
        let declared = query["declared"].flatMap { Int($0) } ?? 1000
        let sent = query["sent"].flatMap { Int($0) } ?? 100
        guard declared > 0, (0..<declared).contains(sent) else {
            return Response.badRequest("need 0 <= sent < declared")
        }
        var headers = HTTPFields()
        headers[.contentType] = "application/octet-stream"
        headers[.contentLength] = String(declared)
        let body = ResponseBody(contentLength: declared) { writer in
            if sent > 0 {
                try await writer.write(ByteBuffer(repeating: UInt8(ascii: "x"), count: sent))
            }
            throw TruncatedBody()
        }
        return Response(status: .ok, headers: headers, body: body)
    }

    private static func flaky(key: String, _ query: QueryItems, state: ServerState) async throws -> Response {
        guard let failures = Int(query["failures"] ?? "1"), failures >= 0 else {
            return Response.badRequest("failures must be a whole number")
        }
        guard let code = Int(query["status"] ?? "503"), (400...599).contains(code) else {
            return Response.badRequest("status must be 400...599")
        }
        let attempt = await state.flakyAttempt(key)
        guard attempt <= failures else {
            return try Response.json(FlakyResponse(key: key, attempts: attempt, error: false))
        }
        var headers = HTTPFields()
        if let seconds = query["retryAfter"] {
            guard let seconds = Int(seconds), seconds >= 0 else {
                return Response.badRequest("retryAfter must be whole seconds")
            }
            headers[.retryAfter] = String(seconds)
        } else if let seconds = query["retryAfterDate"] {
            guard let seconds = Int(seconds), seconds >= 0 else {
                return Response.badRequest("retryAfterDate must be whole seconds")
            }
            // An HTTP-date has whole seconds: round up so the client waits at least `seconds`.
            let date = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + Double(seconds)).rounded(.up))
            headers[.retryAfter] = HTTPDate.string(from: date)
        }
        return try Response.json(
            FlakyResponse(key: key, attempts: attempt, error: true),
            status: HTTPResponse.Status(code: code),
            headers: headers
        )
    }
}

/// Thrown by `/truncated`'s body writer to make Hummingbird drop the connection mid-body.
private struct TruncatedBody: Error {}
