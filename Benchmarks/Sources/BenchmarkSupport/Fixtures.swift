public import Courier
public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Makes a given number of calls of one kind; what every benchmark times.
public typealias Calls = @Sendable (_ count: Int) async throws -> Void

/// Keeps `value` alive and opaque to the optimizer, so that the work producing it is not removed.
///
/// - Parameter value: Anything.
@inline(never)
public func sink<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// The cheapest transport there is: every request gets the same prebuilt response, without suspending.
///
/// The benchmarks measure what Courier adds in front of a transport, so the transport itself should cost
/// as little as possible. (`MockTransport` from `CourierTesting` validates and records every request, which
/// would swamp a pass-through layer and grow without bound over millions of calls.)
public struct InMemoryTransport: Transport {
    let data: Data
    let response: HTTPURLResponse

    /// Creates a transport that answers `200 OK` with a small JSON body.
    ///
    /// - Parameter headerFields: The response's header fields; only `Content-Type` by default.
    public init(headerFields: [String: String] = ["Content-Type": "application/json"]) {
        data = Data(Fixtures.body.utf8)
        response = HTTPURLResponse(
            url: Fixtures.url,
            statusCode: 200,
            httpVersion: "HTTP/1.1",
            headerFields: headerFields
        )!
    }

    /// Returns the prebuilt response.
    ///
    /// - Parameter request: Ignored.
    /// - Returns: The body and the response.
    /// - Throws: Never.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        (data, response)
    }
}

/// An in-memory transport that suspends once before it answers, as a transport waiting on a socket does.
///
/// Over ``InMemoryTransport`` nothing ever suspends, so a timeout never arms its timer; this transport makes
/// every call take the path a real request takes (the suspension itself is a `Task.yield()`, about a
/// microsecond).
public struct SuspendingTransport: Transport {
    let base = InMemoryTransport()

    /// Creates the transport.
    public init() {}

    /// Yields once, then returns the prebuilt response.
    ///
    /// - Parameter request: Ignored.
    /// - Returns: The body and the response.
    /// - Throws: Never.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        await Task.yield()
        return try await base.send(request)
    }
}

/// The requests and middleware the benchmarks share.
public enum Fixtures {
    /// The URL every in-memory request goes to.
    public static let url = URL(string: "http://127.0.0.1:8080/users/42")!

    /// The base URL ``url`` is `/users/42` on.
    public static let baseURL = URL(string: "http://127.0.0.1:8080")!

    /// The body every server and transport answers with.
    public static let body = #"{"id":42,"name":"Ada"}"#

    /// A typical small GET with one header, built once: what callers hand to `Client.send`.
    public static let request: URLRequest = {
        var request = URLRequest(url: url)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        return request
    }()

    /// A middleware that only calls `next`: the floor of what a layer costs.
    public static let passThrough = Middleware(name: "passThrough") { request, next in
        try await next(request)
    }

    /// `count` pass-through layers.
    ///
    /// - Parameter count: How many.
    /// - Returns: The layers.
    public static func passThrough(_ count: Int) -> [Middleware] {
        Array(repeating: passThrough, count: count)
    }

    /// `count` layers that each set a header of their own, written as the README shows it.
    ///
    /// - Parameter count: How many.
    /// - Returns: The layers.
    public static func headerSetting(_ count: Int) -> [Middleware] {
        (0..<count).map { index in
            let name = "X-Layer-\(index)"
            return Middleware(name: "header\(index)") { request, next in
                var request = request
                request.setValue("courier", forHTTPHeaderField: name)
                return try await next(request)
            }
        }
    }
}

/// Calls straight to `transport`, as a caller without Courier would.
///
/// - Parameter transport: The transport.
/// - Returns: The calls.
public func callingDirectly(_ transport: any Transport) -> Calls {
    let request = Fixtures.request
    return { count in
        for _ in 0..<count {
            sink(try await transport.send(request))
        }
    }
}

/// `client.send(Request<Data>)` calls to `target` (by default ``Fixtures/url``), with `timeout` as the request's
/// ``Request/timeout``.
///
/// - Parameters:
///   - client: The client.
///   - target: Where the requests go.
///   - timeout: The per-request timeout, or `nil` for none.
/// - Returns: The calls.
public func sendingTyped(
    through client: Client,
    to target: Request<Data>.Target = .url(Fixtures.url),
    timeout: Duration?
) -> Calls {
    let request = Request<Data>(method: .get, target: target, timeout: timeout) { data, _, _ in data }
    return { count in
        for _ in 0..<count {
            sink(try await client.send(request))
        }
    }
}

/// `client.send(URLRequest)` calls.
///
/// - Parameter client: The client.
/// - Returns: The calls.
public func sending(through client: Client) -> Calls {
    let request = Fixtures.request
    return { count in
        for _ in 0..<count {
            sink(try await client.send(request))
        }
    }
}
