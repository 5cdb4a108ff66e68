public import Courier
public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// A `Transport` that forwards every request to the transport installed for the current task, so that
/// tests running in parallel each talk to their own mock through the same client.
///
/// Build the client under test with a `TestTransport`, then install a mock per test with the
/// `.mockTransport` trait (or ``withTestTransport(_:isolation:operation:)``):
///
/// ```swift
/// @Suite struct ProfileTests {
///     let client = Client(baseURL: URL(string: "https://api.example.com")!, transport: TestTransport())
///
///     @Test(.mockTransport {
///         MockRoute.get("/me").replies(.json(Profile(name: "Ada"))).expectCalls(1)
///     })
///     func loadsTheProfile() async throws {
///         let profile = try await ProfileService(client: client).profile()
///         #expect(profile.name == "Ada")
///         #expect(MockTransport.current?.lastRequest?.path == "/me")
///     }
/// }
/// ```
///
/// The override is a task-local value: it reaches the test's child tasks and the tasks it creates with
/// `Task { }`, and no other test sees it. Production code pays nothing for this: `Client.send` has no
/// testing hook; only a client built with a `TestTransport` looks up the override, once per request.
///
/// A `Task.detached` (for example work that must outlive the request that started it) does not inherit
/// task-local values. When the code under test detaches work, build its client inside the test with the
/// installed transport as the fallback, `TestTransport(fallback: TestTransport.current)`, or with the
/// mock itself. (The fallback is not captured by default: a `static let` client is created lazily inside
/// whichever test touches it first, and must not keep that test's mock.)
public struct TestTransport: Transport {
    /// The transport installed for the current task, or `nil`.
    @TaskLocal public static var current: (any Transport)?

    /// Where requests go when no transport is installed for the sending task; `nil` makes them fail.
    public let fallback: (any Transport)?

    /// Creates a transport that forwards to the installed one.
    ///
    /// - Parameter fallback: Where requests go when no transport is installed for the sending task, for
    ///   example `TestTransport.current` read inside the test; `nil` (the default) makes such requests throw
    ///   a ``MockTransportError`` that says how to install one.
    public init(fallback: (any Transport)? = nil) {
        self.fallback = fallback
    }

    /// Sends `request` through the transport installed for the current task.
    ///
    /// - Returns: The installed transport's response.
    /// - Throws: The installed transport's error, ``MockTransportError`` when none is installed and
    ///   there is no fallback, or `CourierError` (`.invalidRequest`) for a request that could not be sent
    ///   safely.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        // Like the real transports, refuse what could not be sent safely; such a request is not recorded.
        try RequestValidation.validate(request)
        return try await installed(for: request).send(request)
    }

    private func installed(for request: URLRequest) throws -> any Transport {
        guard let transport = Self.current ?? fallback else {
            throw MockTransportError(
                message: """
                    TestTransport: no transport is installed for this task (\(request.summary)); add the \
                    `.mockTransport` trait to the test, wrap the code in `withTestTransport(_:operation:)`, \
                    or give the TestTransport a fallback
                    """
            )
        }
        return transport
    }

    /// Streams `request` through the transport installed for the current task, or the fallback.
    public func stream(_ request: URLRequest) async throws -> (StreamedBody, HTTPURLResponse) {
        try RequestValidation.validate(request)
        return try await installed(for: request).stream(request)
    }
}

/// Runs `operation` with `transport` installed for the current task: a ``TestTransport`` used inside
/// (and in the tasks it starts) sends to `transport`. When `transport` is a ``MockTransport``, it is
/// also ``MockTransport/current``.
///
/// ```swift
/// let api = MockTransport { MockRoute.get("/me").replies(.json(me)) }
/// try await withTestTransport(api) {
///     _ = try await service.profile()
/// }
/// #expect(api.requests.count == 1)
/// ```
///
/// - Parameters:
///   - transport: The transport that test clients use while `operation` runs.
///   - isolation: The caller's actor; inferred.
///   - operation: The code that runs with the transport installed.
/// - Returns: What `operation` returns.
/// - Throws: What `operation` throws.
public func withTestTransport<Result>(
    _ transport: any Transport,
    isolation: isolated (any Actor)? = #isolation,
    operation: () async throws -> Result
) async rethrows -> Result {
    if let mock = transport as? MockTransport {
        return try await MockTransport.$current.withValue(mock) {
            try await TestTransport.$current.withValue(transport, operation: operation)
        }
    }
    return try await TestTransport.$current.withValue(transport, operation: operation)
}
