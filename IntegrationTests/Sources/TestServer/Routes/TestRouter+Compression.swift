import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension TestServers {
    /// The body `/compressed/:encoding` sends once decompressed: `{"compressed":true,"text":"Courier Courier …"}`
    /// ("Courier " 64 times), 541 bytes.
    public static let compressedBodyText =
        #"{"compressed":true,"text":""# + String(repeating: "Courier ", count: 64) + #""}"#
}

extension TestRouter {
    /// ``TestServers/compressedBodyText`` compressed once, with Python's `gzip.compress(body, mtime=0)` and `zlib.compress(body)`
    /// (a fixture: nothing in this package compresses).
    private static let compressedBodies: [String: String] = [
        "gzip": "H4sIAAAAAAACA6tWSs7PLShKLS5OTVGyKikqTdVRKkmtKFGyUnLOLy3KTC1SGKVHJq1UCwAZuQIZHQIAAA==",
        "deflate": "eJyrVkrOzy0oSi0uTk1RsiopKk3VUSpJrShRslJyzi8tykwtUhilRyatVAsA7R/IXw==",
    ]

    /// `GET /compressed/:encoding` (`gzip` or `deflate`): ``TestServers/compressedBodyText`` with that `Content-Encoding`,
    /// whatever the request accepts; the request's `Accept-Encoding` comes back in `X-Accept-Encoding`.
    static func addCompressionRoutes(to router: Router<BasicRequestContext>) {
        router.get("compressed/:encoding") { request, context in
            let encoding = context.parameters.get("encoding") ?? ""
            guard let base64 = Self.compressedBodies[encoding], let body = Data(base64Encoded: base64) else {
                return Response.badRequest("encoding must be gzip or deflate")
            }
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            headers[.contentEncoding] = encoding
            headers[HTTPField.Name("X-Accept-Encoding")!] = request.headers[.acceptEncoding] ?? "(none)"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
        }
    }
}
