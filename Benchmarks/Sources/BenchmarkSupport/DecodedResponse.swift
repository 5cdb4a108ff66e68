import Foundation
import NIOHTTP1

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Issue 17 asked for a cheaper way to hand response fields to `HTTPURLResponse`. FoundationNetworking's
// `init(url:statusCode:httpVersion:headerFields:)` capitalises and compares every field name through `NSString`
// and parses `Content-Type` a character at a time; the only other public way to make one is `init(coder:)`,
// which takes the fields as they are stored. This scenario makes responses that way, from a decoder that
// already holds the canonical names, the MIME type, the encoding and the length (work a transport would have to
// do too, not counted here), to show what that route costs: more, because the decoder hands the URL and the
// fields over as `NSURL` and `NSDictionary`, which the initializer bridges back (see RESULTS.md).

extension TransportScenarios {
    /// Makes an `HTTPURLResponse` with `headers` through `init(coder:)`, `count` times.
    static func decodingResponse(headers: NIOHTTP1.HTTPHeaders) -> Calls {
        let url = loopbackRequest.url!
        var fields: [String: String] = [:]
        for (name, value) in headers {
            fields[name] = fields[name].map { $0 + ", " + value } ?? value
        }
        // The canonical fields and the values the initializer would work out, taken once from a response made
        // the usual way.
        let model = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: fields)!
        var canonical: [String: String] = [:]
        for case (let name as String, let value as String) in model.allHeaderFields {
            canonical[name] = value
        }
        let head = DecodedHead(
            url: url,
            fields: canonical,
            mimeType: model.mimeType,
            textEncodingName: model.textEncodingName,
            length: model.expectedContentLength
        )
        return { count in
            for _ in 0..<count {
                sink(head.response())
            }
        }
    }
}

/// What a response head decoder hands `HTTPURLResponse.init(coder:)`.
private struct DecodedHead: Sendable {
    let url: URL
    let fields: [String: String]
    let mimeType: String?
    let textEncodingName: String?
    let length: Int64

    func response() -> HTTPURLResponse {
        #if canImport(FoundationNetworking)
        HTTPURLResponse(coder: HeadDecoder(self))!
        #else
        HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: fields)!
        #endif
    }
}

#if canImport(FoundationNetworking)
/// A keyed decoder that answers the keys FoundationNetworking's `URLResponse` and `HTTPURLResponse` decode.
private final class HeadDecoder: NSCoder {
    private let head: DecodedHead

    init(_ head: DecodedHead) {
        self.head = head
    }

    override var allowsKeyedCoding: Bool { true }

    override func containsValue(forKey key: String) -> Bool {
        key == "NS.allHeaderFields"
    }

    override func decodeInteger(forKey key: String) -> Int {
        key == "NS.statusCode" ? 200 : 0
    }

    override func decodeInt64(forKey key: String) -> Int64 {
        key == "NS.expectedContentLength" ? head.length : 0
    }

    override func decodeObject<DecodedObjectType: NSCoding>(
        of cls: DecodedObjectType.Type,
        forKey key: String
    ) -> DecodedObjectType? where DecodedObjectType: NSObject {
        let object: NSObject? =
            switch key {
            case "NS.url": NSURL(string: head.url.absoluteString)
            case "NS.allHeaderFields": NSDictionary(dictionary: head.fields)
            case "NS.mimeType": head.mimeType.map { NSString(string: $0) }
            case "NS.textEncodingName": head.textEncodingName.map { NSString(string: $0) }
            default: nil
            }
        return object as? DecodedObjectType
    }
}
#endif
