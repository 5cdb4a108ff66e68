import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension TestRouter {
    /// `/json`, `/users/:id`, `/echo`, `/echo/**` and `/large/:bytes`.
    static func addContentRoutes(to router: Router<BasicRequestContext>, state: ServerState) {
        router.get("json") { _, _ in
            try Response.json(User(id: 42, name: "Ada"))
        }

        router.get("users/:id") { _, context in
            guard let id = context.parameters.get("id", as: Int.self) else {
                return try Response.json(ErrorResponse(reason: "No such user."), status: .notFound)
            }
            return try Response.json(User(id: id, name: id == 42 ? "Ada" : "User \(id)"))
        }

        for method in Self.allMethods {
            router.on("echo", method: method) { request, _ in
                try await Self.echo(request, state: state)
            }
            router.on("echo/**", method: method) { request, _ in
                try await Self.echo(request, state: state)
            }
        }

        router.get("large/:bytes") { request, context in
            guard let count = context.parameters.get("bytes", as: Int.self), (0...maximumLargeBody).contains(count)
            else {
                return Response.badRequest("bytes must be 0...\(maximumLargeBody)")
            }
            let chunked = QueryItems(request.uri.query)["chunked"] == "1"
            var headers = HTTPFields()
            headers[.contentType] = "application/octet-stream"
            let body = ResponseBody(contentLength: chunked ? nil : count) { writer in
                var offset = 0
                while offset < count {
                    let length = min(largeBodyChunk, count - offset)
                    var buffer = ByteBuffer()
                    buffer.reserveCapacity(length)
                    for index in offset..<(offset + length) {
                        buffer.writeInteger(TestServers.largeBodyByte(at: index))
                    }
                    try await writer.write(buffer)
                    offset += length
                }
                try await writer.finish(nil)
            }
            return Response(status: .ok, headers: headers, body: body)
        }
    }

    /// The largest body `/large/:bytes` sends.
    static let maximumLargeBody = 256 * 1024 * 1024

    /// The size of each write `/large/:bytes` makes.
    static let largeBodyChunk = 64 * 1024

    /// Builds the echo of a request.
    static func echo(_ request: Request, state: ServerState) async throws -> Response {
        var request = request
        let body = try await request.collectBody(upTo: Self.maximumEchoBody)
        let bytes = Data(body.readableBytesView)
        var headers: [String: [String]] = [:]
        if let authority = request.head.authority {
            headers["host"] = [authority]
        }
        for field in request.headers {
            headers[field.name.canonicalName, default: []].append(field.value)
        }
        let echo = EchoResponse(
            server: state.name,
            origin: await state.origin?.absoluteString ?? "",
            method: request.method.rawValue,
            path: request.uri.path,
            query: request.uri.query,
            queryItems: QueryItems(request.uri.query).values,
            headers: headers,
            body: String(data: bytes, encoding: .utf8),
            bodyBase64: bytes.base64EncodedString(),
            bodyLength: bytes.count
        )
        return try Response.json(echo)
    }
}
