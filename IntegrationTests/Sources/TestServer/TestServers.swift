public import Foundation
public import Hummingbird
import Logging
public import ServiceLifecycle

/// Starts loopback HTTP servers for Courier's end-to-end tests.
///
/// Every server binds `127.0.0.1` at an ephemeral port, and nothing it does reaches any other
/// address: redirects go to paths or to `http://127.0.0.1:…` URLs only. State (counters, tokens)
/// belongs to one server; tests that run in parallel pick their own keys and realms (a UUID is
/// good) rather than resetting.
///
/// ```swift
/// try await TestServers.withTwoOrigins { a, b in
///     let url = a.url("/redirect/307", query: ["to": b.url("/echo").absoluteString])
///     // … follow it with the client under test; the echo's `server` is "b".
/// }
/// ```
///
/// ## Endpoints
///
/// Methods are GET unless listed. "Any" means GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS.
/// JSON keys are sorted. Bad parameters answer `400 {"error":"…"}`.
///
/// Content
/// - `GET /json` → `{"id":42,"name":"Ada"}`.
/// - `GET /users/:id` → `{"id":ID,"name":"…"}` (`"Ada"` for 42); 404 if the id is not an integer.
/// - `ANY /echo`, `ANY /echo/**` → ``EchoResponse``: method, path, query, every header (lowercased
///   names, repeated values kept), and the body (text and base64). Bodies up to 16 MiB.
/// - `GET /large/:bytes` → that many bytes of ``largeBodyByte(at:)`` (up to 256 MiB), written in
///   64 KiB chunks with a `Content-Length`; `?chunked=1` leaves the length out (chunked encoding).
///
/// Faults
/// - `ANY /status/:code` → that status (200…599) with `{"status":CODE}`; `?body=TEXT` sends that
///   text instead; `?header=name:value` (repeatable) adds headers. 204 and 304 have no body.
/// - `GET /delay/:ms` → `{"delayedMs":MS}` after that many milliseconds (at most 5000).
/// - `GET /hang` → no answer until the client closes the connection or the server shuts down
///   (then 503). With `?key=K` the counters `hanging` and `hangsEnded` of `K` follow it.
/// - `GET /truncated` → declares `Content-Length: 1000`, sends 100 bytes and closes the connection;
///   `?declared=` and `?sent=` change the numbers.
/// - `ANY /flaky/:key?failures=N&status=S` → the first N requests for the key answer S (default
///   1 and 503), later ones 200; the body is a ``FlakyResponse`` (`{"attempts":K,…}`) either way.
///   A failure carries `Retry-After: SECONDS` with `?retryAfter=SECONDS`, or an HTTP-date that many
///   seconds ahead (rounded up to a whole second) with `?retryAfterDate=SECONDS`.
///
/// Counters (a ``CounterSnapshot`` per key; these routes are never counted themselves)
/// - `ANY /hit/:key` → counts a hit and answers the counters.
/// - any other request with `?countKey=K` or an `X-Count-Key: K` header counts a hit for `K`.
/// - `GET /count/:key` → the counters (`hits`, `flakyAttempts`, `hanging`, `hangsEnded`,
///   `waiting`).
/// - `GET /wait/:key?hits=N&flakyAttempts=N&hanging=N&hangsEnded=N&waiting=N&timeoutMs=MS` →
///   waits until each named counter is at least N, then 200 with the counters; 408 with them after
///   `timeoutMs` (default 5000, at most 60000) or at shutdown (`X-Wait-Ended: met`, `timeout` or `shutdown`).
///   While it waits it counts in `waiting`.
///   A test synchronises on the server with this, not with sleeps.
/// - `POST /reset` → 204, forgets every counter and realm (for serial use only).
///
/// Auth (per realm: `/auth/:realm/…` and `/auth/:realm/protected…`; the same paths without the
/// realm use the realm `default`)
/// - `POST /auth/:realm/token` → ``TokenResponse`` (`{"token":"…","expiresIn":N}`): a new token
///   each call, which revokes the previous one. `?expiresIn=SECONDS` (default 3600; the server
///   enforces it, and 0 gives a token that is already expired), `?delayMs=MS` answers late,
///   `?fail=STATUS` answers that status and issues nothing.
/// - `GET /auth/:realm/protected`, `GET /protected` → `200 {"ok":true,"realm":…}` with
///   `Authorization: Bearer CURRENT`, else `401` with `WWW-Authenticate: Bearer …` and
///   `{"error":true,"reason":"…"}`.
/// - `GET /auth/:realm/protected-403`, `GET /protected-403` → the same, but a bad token answers
///   `403 {"code":999,"error":true,"reason":"Invalid Token."}`.
/// - `POST /auth/:realm/expire`, `POST /auth/expire` → `{"expired":BOOL}`: the current token is no
///   longer accepted (until a new one is issued).
/// - `GET /auth/:realm/stats`, `GET /auth/stats` → ``AuthStats`` (`issued`, `refreshes`,
///   `tokenRequests`, `accepted`, `rejected`).
/// - `GET /basic-auth/:user/:password` → `200 {"authenticated":true,"user":USER}` with
///   `Authorization: Basic` of `USER:PASSWORD`, else `401` with
///   `WWW-Authenticate: Basic realm="Fake Realm"` (as httpbin's).
/// - `ANY /challenge/:scheme` → `401` with a `WWW-Authenticate` challenge of `basic`
///   (`Basic realm="Fake Realm"`), `digest` or `negotiate`; `proxy` answers `407` with
///   `Proxy-Authenticate: Basic realm="Fake Realm"`. The body is `{"error":true,"reason":"…"}`.
///
/// Redirects (the body is a short text; relative `Location`s are the client's to resolve)
/// - `ANY /redirect/:code?to=TARGET` → `code` (301, 302, 303, 307, 308) to TARGET: a path on the
///   same origin, or an absolute `http://127.0.0.1:PORT/…` URL (anything else is refused with
///   400); default `/echo`. `?peer=1` makes a path TARGET point at the peer origin.
/// - `ANY /redirect-chain/:n` → n hops, then `/echo`: `/redirect-chain/2` → `/redirect-chain/1`
///   → `/echo`; `n` = 0 answers like `/echo`. `?code=` (default 302), `?alternate=1` sends each
///   hop to the peer origin; the query is kept on every hop.
/// - `ANY /redirect-loop` → 302 to the peer's `/redirect-loop` (to itself without a peer), forever.
///
/// Compression
/// - `GET /compressed/:encoding` (`gzip`, `deflate`) → ``compressedBodyText`` compressed, with that
///   `Content-Encoding` whatever the request accepts; the request's `Accept-Encoding` comes back in
///   `X-Accept-Encoding` (`(none)` without one).
///
/// OpenAPI (the end-to-end tests' OpenAPI document, server URL `/openapi`; each behind the realm's bearer
/// token, answering 401 with `WWW-Authenticate: Bearer …` otherwise)
/// - `GET /openapi/realms/:realm/items/:id` → `200 {"id":ID,"name":"Item ID","realm":REALM}`; `missing` → 404.
/// - `POST /openapi/realms/:realm/items` with `{"name":NAME}` → `201 {"id":"new-NAME","name":NAME,"realm":REALM}`.
public enum TestServers {
    /// Starts a server on `127.0.0.1` at an ephemeral port.
    ///
    /// The server runs until ``RunningServer/shutdown()``; while a test runs alone (``ServerGate``), it first waits
    /// for that test to end. Log output is quiet (warnings and up)
    /// unless `TEST_SERVER_LOG_LEVEL` names another level (`trace`, `debug`, `info`, …).
    ///
    /// - Parameter name: The name the server reports in ``EchoResponse/server``.
    /// - Returns: The running server.
    /// - Throws: ``TestServerError`` if the server could not bind or start.
    public static func start(name: String = "server") async throws -> RunningServer {
        let state = ServerState(name: name)
        let server = try await Self.start(name: name, router: TestRouter.make(state: state), state: state)
        await state.setOrigin(server.baseURL)
        return server
    }

    /// Starts `router` in place of the test server's routes, the same way: a service under test, such as the
    /// fan-out example, on `127.0.0.1` at an ephemeral port.
    ///
    /// - Parameters:
    ///   - name: The server's name, for its logs.
    ///   - router: The routes to serve.
    ///   - services: Services the server's handlers use (a Courier `Client`, say), run in the same
    ///     `ServiceGroup` before the server: a graceful shutdown stops the server first, then these.
    /// - Returns: The running server.
    /// - Throws: ``TestServerError`` if the server could not bind or start.
    public static func start(
        name: String,
        router: sending Router<BasicRequestContext>,
        services: [any Service] = []
    ) async throws -> RunningServer {
        try await Self.start(name: name, router: router, state: ServerState(name: name), services: services)
    }

    private static func start(
        name: String,
        router: sending Router<BasicRequestContext>,
        state: ServerState,
        services: [any Service] = []
    ) async throws -> RunningServer {
        // Waits while a test runs alone (see `ServerGate`); the place is left when the server has stopped.
        let place = try await ServerGate.shared.enter(name)
        var logger = Logger(label: "courier.test-server.\(name)")
        logger.logLevel =
            ProcessInfo.processInfo.environment["TEST_SERVER_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:))
            ?? .warning

        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .bufferingNewest(1))
        let app = Application(
            router: router,
            configuration: ApplicationConfiguration(
                address: .hostname("127.0.0.1", port: 0),
                serverName: "courier-test-server"
            ),
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port ?? 0)
                portContinuation.finish()
            },
            logger: logger
        )
        // A ServiceGroup shuts its services down in reverse order: the server, then what its handlers use.
        let serviceGroup = ServiceGroup(services: services + [app], logger: logger)
        let runTask = Task {
            // If the server stops before it runs (it could not bind), end the wait for its port.
            defer { portContinuation.finish() }
            try await serviceGroup.run()
        }

        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else {
            runTask.cancel()
            do {
                try await runTask.value
                throw TestServerError("The test server \(name) stopped before it was listening.")
            } catch let error as TestServerError {
                throw error
            } catch {
                throw TestServerError("The test server \(name) could not start: \(error)")
            }
        }
        return RunningServer(
            name: name,
            port: port,
            state: state,
            serviceGroup: serviceGroup,
            runTask: runTask,
            place: place
        )
    }

    /// Runs `body` with a server started for it, and shuts the server down afterwards, whether
    /// `body` returns or throws.
    ///
    /// - Parameters:
    ///   - name: The name the server reports in ``EchoResponse/server``.
    ///   - isolation: The actor `body` runs on; the caller's, by default.
    ///   - body: The code that uses the server.
    /// - Returns: What `body` returns.
    /// - Throws: ``TestServerError`` if the server could not start, or what `body` throws.
    @discardableResult
    public static func withServer<Result>(
        name: String = "server",
        isolation: isolated (any Actor)? = #isolation,
        _ body: (RunningServer) async throws -> Result
    ) async throws -> Result {
        try await Self.run(Self.start(name: name), body)
    }

    /// Runs `body` with `router` started in place of the test server's routes (see
    /// ``start(name:router:services:)``), and shuts it down afterwards, whether `body` returns or throws.
    ///
    /// - Parameters:
    ///   - name: The server's name, for its logs.
    ///   - router: The routes to serve.
    ///   - services: Services the server's handlers use, shut down after the server.
    ///   - isolation: The actor `body` runs on; the caller's, by default.
    ///   - body: The code that uses the server.
    /// - Returns: What `body` returns.
    /// - Throws: ``TestServerError`` if the server could not start, or what `body` throws.
    @discardableResult
    public static func withServer<Result>(
        name: String,
        router: sending Router<BasicRequestContext>,
        services: [any Service] = [],
        isolation: isolated (any Actor)? = #isolation,
        _ body: (RunningServer) async throws -> Result
    ) async throws -> Result {
        try await Self.run(Self.start(name: name, router: router, services: services), body)
    }

    private static func run<Result>(
        _ server: RunningServer,
        isolation: isolated (any Actor)? = #isolation,
        _ body: (RunningServer) async throws -> Result
    ) async throws -> Result {
        do {
            let result = try await body(server)
            await server.shutdown()
            return result
        } catch {
            await server.shutdown()
            throw error
        }
    }

    /// Runs `body` with two servers, `a` and `b`, on two ports of `127.0.0.1`, each the other's
    /// peer, so redirects can cross origin; shuts both down afterwards.
    ///
    /// - Parameters:
    ///   - isolation: The actor `body` runs on; the caller's, by default.
    ///   - body: The code that uses the servers, named `"a"` and `"b"`.
    /// - Returns: What `body` returns.
    /// - Throws: ``TestServerError`` if a server could not start, or what `body` throws.
    @discardableResult
    public static func withTwoOrigins<Result>(
        isolation: isolated (any Actor)? = #isolation,
        _ body: (_ a: RunningServer, _ b: RunningServer) async throws -> Result
    ) async throws -> Result {
        let a = try await Self.start(name: "a")
        let b: RunningServer
        do {
            b = try await Self.start(name: "b")
        } catch {
            await a.shutdown()
            throw error
        }
        await a.setPeer(b)
        await b.setPeer(a)
        do {
            let result = try await body(a, b)
            await a.shutdown()
            await b.shutdown()
            return result
        } catch {
            await a.shutdown()
            await b.shutdown()
            throw error
        }
    }

    /// The byte at `offset` of every `/large/:bytes` body: `offset % 251`, a pattern that does not
    /// repeat at any power-of-two chunk size, so a lost or reordered chunk shows.
    ///
    /// - Parameter offset: The offset from the start of the body.
    /// - Returns: The byte the server sends there.
    public static func largeBodyByte(at offset: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: offset % 251)
    }

    /// The body `/large/:bytes` sends for `count` bytes.
    ///
    /// - Parameter count: The body length.
    /// - Returns: The expected body.
    public static func largeBody(count: Int) -> Data {
        Data((0..<count).lazy.map(Self.largeBodyByte(at:)))
    }
}
