public import Courier

#if canImport(FoundationNetworking)
import Foundation
public import FoundationNetworking
#else
public import Foundation
#endif

/// A test double that records the requests it receives, in order.
///
/// ``MockTransport``, ``HoldingTransport`` and ``FaultInjectingTransport`` record requests; these reads
/// work on all of them and are made to sit in `#expect`, as do the reads the kit adds to each `URLRequest`
/// (`path`, `method`, `header(_:)`, `decodedBody(as:decoder:)`, …):
///
/// ```swift
/// #expect(api.requests(matching: .post, "/users").count == 1)
/// #expect(api.lastRequest?.header("Authorization") == "Bearer t2")
/// #expect(try api.requests[0].decodedBody(as: NewUser.self) == NewUser(name: "Ada"))
/// #expect(api.requests.map(\.path) == ["/login", "/me"])
/// ```
public protocol RequestRecording: Sendable {
    /// Every request received, in the order they arrived.
    var requests: [URLRequest] { get }
}

extension RequestRecording {
    /// The first request received, or `nil`.
    public var firstRequest: URLRequest? { requests.first }

    /// The last request received, or `nil`.
    public var lastRequest: URLRequest? { requests.last }

    /// The requests with `method` whose path matches `pattern`, in order.
    ///
    /// - Parameters:
    ///   - method: The method, or `nil` for any.
    ///   - pattern: A path pattern as in ``MockRoute`` (`/users/:id`, `*`, a final `**`, `?name=value`).
    public func requests(matching method: HTTPMethod?, _ pattern: String) -> [URLRequest] {
        let route = MockRoute(method, pattern)
        return requests.filter { route.match($0) != nil }
    }

    /// The requests, of any method, whose path matches `pattern`, in order.
    ///
    /// - Parameter pattern: A path pattern as in ``MockRoute``.
    public func requests(to pattern: String) -> [URLRequest] {
        requests(matching: nil, pattern)
    }
}
