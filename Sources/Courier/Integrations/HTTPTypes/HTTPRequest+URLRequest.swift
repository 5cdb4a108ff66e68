#if HTTPTypes
public import Foundation
public import HTTPTypes

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Conversions between `URLRequest` and swift-http-types' `HTTPRequest` (trait `HTTPTypes`).
///
/// ```swift
/// let request = try HTTPRequest(urlRequest)                    // method, URL, headers
/// let urlRequest = try URLRequest(request, body: Data("{}".utf8))
/// ```
///
/// Nothing is dropped or changed silently; what one side cannot hold is an error, or is said here:
/// - `URLRequest` keeps its headers in a dictionary: their order is not kept, and a repeated field is one
///   field whose values are joined. Converting an `HTTPRequest` joins its repeated fields the way HTTP allows,
///   in order: with `", "`, and `Cookie` with `"; "`.
/// - The body is not part of `HTTPRequest`: read `httpBody` yourself, and pass it to
///   `URLRequest.init(_:body:)`.
/// - A URL's fragment is never sent, so it is not part of `HTTPRequest` either.
extension HTTPRequest {
    /// Creates a request with the method, URL and header fields of `request`.
    ///
    /// - Parameter request: The request; its URL must be absolute.
    /// - Throws: ``CourierError/Code/invalidRequest`` when the request has no absolute URL (a scheme and a
    ///   host), its URL has user info (`user:password@`, which `HTTPRequest` cannot carry: send an
    ///   `Authorization` header), its method is not an HTTP token, or a header name or value is not valid
    ///   (see `HTTPFields.init(_:)`), or it has more header fields than an `HTTPFields` holds (65,535).
    public init(_ request: URLRequest) throws {
        let url = try RequestValidation.validatedURL(of: request)
        if url.user != nil || url.password != nil {
            throw CourierError.invalidRequest(
                "the URL has user info, which an HTTPRequest cannot carry (send it in an Authorization header)",
                request: request
            )
        }
        guard let method = HTTPRequest.Method(request.httpMethod ?? "GET") else {
            throw CourierError.invalidRequest("the method is not a valid HTTP token", request: request)
        }
        var fields = HTTPFields()
        if let headers = request.allHTTPHeaderFields, !headers.isEmpty {
            guard headers.count <= HTTPFields.capacity else {
                throw HTTPFields.tooManyFields(headers.count, request: request)
            }
            fields.reserveCapacity(headers.count)
            for (name, value) in headers {
                fields.append(try HTTPField.converting(name: name, value: value, request: request))
            }
        }
        self.init(method: method, url: url, headerFields: fields)
    }
}

extension URLRequest {
    /// Creates a `URLRequest` with the method, URL and header fields of `request`, and `body`.
    ///
    /// Repeated fields are joined into one, in order: `Cookie` values with `"; "`, others with `", "`.
    ///
    /// - Parameters:
    ///   - request: The request; it needs a scheme and an authority (a host).
    ///   - body: The body, or `nil` for none.
    /// - Throws: ``CourierError/Code/invalidRequest`` when the request has no absolute URL (no scheme or
    ///   authority, a `CONNECT` to an authority, or `OPTIONS *`), or is an extended `CONNECT`
    ///   (`:protocol`), which `URLRequest` cannot express; and when its scheme, path or authority would send it
    ///   elsewhere than its authority says: a scheme that is not a letter then letters, digits, `+`, `-` or `.`
    ///   (`https://attacker.example/#` would make the rest a fragment), a path that is neither empty nor starts
    ///   with `/` (`@attacker.example/x` makes the authority user info, `:8443/x` changes the port), or an
    ///   authority with user info or any of `/`, `?`, `#` and `\`. A gateway forwarding a request it received cannot be turned to another host this way.
    public init(_ request: HTTPRequest, body: Data? = nil) throws {
        guard request.extendedConnectProtocol == nil else {
            throw CourierError.invalidRequest(
                "an extended CONNECT request (:protocol) cannot be expressed as a URLRequest",
                request: nil
            )
        }
        guard request.scheme != nil, request.authority != nil, let url = request.url else {
            throw CourierError.invalidRequest(
                "the HTTPRequest has no absolute URL (it needs a scheme, an authority and a path)",
                request: nil
            )
        }
        guard Self.keepsAuthority(request), url.host != nil else {
            throw CourierError.invalidRequest(
                "the HTTPRequest's scheme, path or authority would move it to another host, port or user (a scheme "
                    + "is a letter then letters, digits, \"+\", \"-\" or \".\"; a path starts with \"/\"; an "
                    + "authority has no user info, \"/\", \"?\", \"#\" or \"\\\")",
                request: nil
            )
        }
        self.init(url: url, method: request.method, fields: request.headerFields)
        httpBody = body
    }

    /// Whether the URL swift-http-types builds for `request` (scheme, `://`, authority and path, joined as text)
    /// has the request's authority as its own: the path empty or starting with `/`, and the authority free of the
    /// characters that end an authority or bring user info.
    private static func keepsAuthority(_ request: HTTPRequest) -> Bool {
        // The scheme: a letter, then letters, digits, "+", "-" or "." (RFC 3986 §3.1); anything else could end in
        // "://other.host/#" and make the rest a fragment.
        guard let scheme = request.scheme?.utf8, let first = scheme.first, first | 0x20 &- UInt8(ascii: "a") < 26,
            scheme.allSatisfy({ byte in
                byte | 0x20 &- UInt8(ascii: "a") < 26 || byte &- UInt8(ascii: "0") < 10 || byte == UInt8(ascii: "+")
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            })
        else { return false }
        let path = request.path ?? ""
        guard path.isEmpty || path.utf8.first == UInt8(ascii: "/") else { return false }
        guard let authority = request.authority, !authority.isEmpty else { return false }
        return !authority.utf8.contains { byte in
            byte == UInt8(ascii: "@") || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?")
                || byte == UInt8(ascii: "#") || byte == UInt8(ascii: "\\")
        }
    }

    /// A request for `url` with `method` and `fields`, repeated fields joined in order (`Cookie` with `"; "`).
    ///
    /// One pass over the fields, set on the request at once: `URLRequest`'s own lookup of a field by name goes
    /// through every field, so adding them one by one would cost the square of their number.
    init(url: URL, method: HTTPRequest.Method, fields: HTTPFields) {
        self.init(url: url)
        httpMethod = method.rawValue
        guard !fields.isEmpty else { return }
        allHTTPHeaderFields = HeaderFieldJoining.joined(
            fields.lazy.map { (name: $0.name.rawName, value: $0.value) },
            count: fields.count,
            style: .request
        )
    }
}
#endif
