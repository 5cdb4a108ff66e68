import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("CourierError")
struct CourierErrorTests {
    @Test(
        "codes have stable names",
        arguments: [
            (CourierError.Code.invalidRequest, "invalidRequest"),
            (.encodingFailed, "encodingFailed"),
            (.transport, "transport"),
            (.nonHTTPResponse, "nonHTTPResponse"),
            (.timedOut, "timedOut"),
            (.unacceptableStatus, "unacceptableStatus"),
            (.decodingFailed, "decodingFailed"),
            (.authenticationRejected, "authenticationRejected"),
            (.refreshFailed, "refreshFailed"),
            (.tooManyRefreshes, "tooManyRefreshes"),
            (.tooManyRedirects, "tooManyRedirects"),
            (.redirectLoop, "redirectLoop"),
            (.insecureRedirect, "insecureRedirect"),
            (.bodyTooLarge, "bodyTooLarge"),
            (.clientShutDown, "clientShutDown"),
            (.circuitOpen, "circuitOpen"),
            (.concurrencyLimited, "concurrencyLimited"),
            (.rateLimited, "rateLimited"),
            (.unacceptableContentType, "unacceptableContentType"),
        ]
    )
    func stableCodes(code: CourierError.Code, name: String) {
        #expect(code.description == name)
        #expect(CourierError(code, message: "m").description.hasPrefix("CourierError.\(name): "))
    }

    @Test("an unacceptable status carries the status, headers, body preview, method and URL")
    func responseDetails() async throws {
        let client = Client(
            baseURL: exampleBaseURL,
            transport: MockTransport(.status(503, body: "try later", headers: ["Retry-After": "5"]))
        )
        let error = try #require(
            await #expect(throws: CourierError.self) { let _: User = try await client.send(.get("/users/1")) }
        )
        #expect(error.code == .unacceptableStatus)
        #expect(error.statusCode == 503)
        #expect(error.responseHeaders["Retry-After"] == "5")
        #expect(error.bodyPreview == "try later")
        #expect(error.responseBody == Data("try later".utf8))
        #expect(error.method == "GET")
        #expect(error.redactedURL == "https://api.example.test/users/1")
        #expect(error.description.contains("GET https://api.example.test/users/1 → 503"))
        #expect(error.debugDescription.contains("Retry-After: 5"))
        #expect(error.debugDescription.contains("body: try later"))
    }

    @Test("a named middleware's error carries its name in the error and its description")
    func middlewareName() async throws {
        let client = Client(
            transport: MockTransport.ok,
            middleware: [
                Middleware(name: "quota") { request, _ in
                    throw CourierError(.concurrencyLimited, message: "too busy", request: request)
                }
            ]
        )
        let error = await #expect(throws: CourierError.self) {
            try await client.send(URLRequest(url: exampleBaseURL))
        }
        #expect(error?.middleware == "quota")
        #expect(error?.description.contains("[middleware: quota]") == true)
    }

    @Test("the body preview is cut at 256 characters and the stored body at 64 KiB")
    func bodyLimits() {
        // A slice of a bigger buffer, as a transport may hand over.
        let long = Data(String(repeating: "x", count: 100_010).utf8).dropFirst(10)
        let error = CourierError(.unacceptableStatus, message: "m", body: long)
        #expect(error.bodyPreview == String(repeating: "x", count: 256) + "…")
        #expect(error.responseBody == long.prefix(CourierError.maximumStoredBodySize))
        // A copy of the first 64 KiB, not a slice that keeps the whole body alive.
        #expect(error.responseBody?.startIndex == 0)
        #expect(CourierError(.unacceptableStatus, message: "m", body: Data()).bodyPreview == nil)
        #expect(
            CourierError(.unacceptableStatus, message: "m", body: Data([0xFF, 0xFE, 0x00])).bodyPreview == "<3 bytes>"
        )
    }

    @Test("localizedDescription and String(reflecting:) are the redacted descriptions")
    func descriptions() {
        let error = CourierError(.timedOut, message: "the deadline passed")
        #expect((error as any Error).localizedDescription == error.description)
        #expect(String(reflecting: error) == error.debugDescription)
        #expect(String(describing: error) == error.description)
    }
}

@Suite("Cancellation is never wrapped")
struct CancellationTests {
    private let named = Middleware(name: "outer") { request, next in try await next(request) }

    @Test("a CancellationError from the transport reaches the caller as it is, through named middleware")
    func fromTransport() async throws {
        let client = Client(transport: MockTransport(.failure(CancellationError())), middleware: [named])
        await #expect(throws: CancellationError.self) { try await client.send(URLRequest(url: exampleBaseURL)) }
    }

    @Test("cancelling a caller whose transport hangs throws CancellationError", .timeLimit(.minutes(1)))
    func cancelledWhileHanging() async throws {
        let arrived = Arrivals()
        let transport = MockTransport.hanging(counting: arrived)
        let client = Client(transport: transport, middleware: [named])
        await expectCancellation(sending: URLRequest(url: exampleBaseURL), through: client, arrived: arrived)
        #expect(transport.cancellationCount == 1)
    }

    @Test("a URLError(.cancelled) in a cancelled task is reported as CancellationError", .timeLimit(.minutes(1)))
    func urlErrorCancelled() async throws {
        let gate = Gate()
        let arrived = Arrivals()
        let client = Client(
            transport: MockTransport { _ in
                arrived.arrive()
                await gate.wait()
                throw URLError(.cancelled)
            }
        )
        let task = Task { try await client.send(URLRequest(url: exampleBaseURL)) }
        await arrived.wait(for: 1)
        task.cancel()
        gate.open()
        await #expect(throws: CancellationError.self) { try await task.join() }
    }

    @Test("a CancellationError thrown by a typed request's middleware is not wrapped")
    func typed() async throws {
        let client = Client(
            baseURL: exampleBaseURL,
            transport: MockTransport.ok,
            middleware: [named, Middleware(name: "inner") { _, _ in throw CancellationError() }]
        )
        await #expect(throws: CancellationError.self) { let _: User = try await client.send(.get("/u")) }
    }

    @Test("a custom decoding closure that throws CancellationError is not wrapped")
    func fromDecode() async throws {
        let client = Client(baseURL: exampleBaseURL, transport: MockTransport.ok)
        let request = Request<Int>(method: .get, target: .path("/n")) { _, _, _ in throw CancellationError() }
        await #expect(throws: CancellationError.self) { try await client.send(request) }
    }
}

@Suite("Which middleware an error came from")
struct ErrorAttributionTests {
    private struct Failure: Error {}

    private static func throwing(_ name: String?) -> Middleware {
        Middleware(name: name) { request, _ in
            throw CourierError(.authenticationRejected, message: "no", request: request)
        }
    }

    private static func passing(_ name: String?) -> Middleware {
        Middleware(name: name) { request, next in try await next(request) }
    }

    private func error(
        middleware: [Middleware],
        transport: MockTransport = .ok
    ) async -> CourierError? {
        let client = Client(transport: transport, middleware: middleware)
        return await #expect(throws: CourierError.self) { try await client.send(URLRequest(url: exampleBaseURL)) }
    }

    @Test("an error keeps the name of the innermost named middleware it came from")
    func innermostNamed() async throws {
        let error = await error(middleware: [Self.passing("outer"), Self.passing("middle"), Self.throwing("inner")])
        #expect(error?.middleware == "inner")
    }

    @Test("an unnamed middleware's error names nobody, even inside named ones")
    func unnamedThrower() async throws {
        let error = await error(middleware: [Self.passing("outer"), Self.throwing(nil)])
        #expect(error?.middleware == nil)
    }

    @Test("a new error a middleware makes from an inner failure carries that middleware's name")
    func rethrownAsNew() async throws {
        let wrapping = Middleware(name: "wrapper") { request, next in
            do {
                return try await next(request)
            } catch let inner as CourierError {
                throw CourierError(.refreshFailed, message: "gave up", request: request, underlying: inner)
            }
        }
        let error = await error(middleware: [Self.passing("outer"), wrapping, Self.throwing("inner")])
        #expect(error?.code == .refreshFailed)
        #expect(error?.middleware == "wrapper")
        #expect((error?.underlying as? CourierError)?.middleware == "inner")
    }

    @Test("a transport error has no middleware, code transport and the original error underneath")
    func transportError() async throws {
        let failure = URLError(.cannotConnectToHost)
        let error = await error(
            middleware: [Self.passing("outer"), Self.passing("inner")],
            transport: MockTransport(.failure(failure))
        )
        #expect(error?.code == .transport)
        #expect(error?.middleware == nil)
        #expect((error?.underlying as? URLError)?.code == .cannotConnectToHost)
    }

    @Test("a CourierError thrown by the transport keeps its code and names no middleware")
    func transportCourierError() async throws {
        let error = await error(
            middleware: [Self.passing("outer")],
            transport: MockTransport(.failure(CourierError(.bodyTooLarge, message: "too big")))
        )
        #expect(error?.code == .bodyTooLarge)
        #expect(error?.middleware == nil)
    }

    @Test("a status or decoding failure of a typed request names no middleware")
    func typedRequestFailures() async throws {
        let client = Client(
            baseURL: exampleBaseURL,
            transport: MockTransport(.status(500), then: .json("[]")),
            middleware: [Self.passing("outer")]
        )
        let status = await #expect(throws: CourierError.self) { let _: User = try await client.send(.get("/u")) }
        #expect(status?.code == .unacceptableStatus)
        #expect(status?.middleware == nil)
        let decoding = await #expect(throws: CourierError.self) { let _: User = try await client.send(.get("/u")) }
        #expect(decoding?.code == .decodingFailed)
        #expect(decoding?.middleware == nil)
    }

    @Test("an error that is not a CourierError passes through unchanged")
    func foreignError() async throws {
        let client = Client(
            transport: MockTransport.ok,
            middleware: [Self.passing("outer"), Middleware(name: "inner") { _, _ in throw Failure() }]
        )
        await #expect(throws: Failure.self) { try await client.send(URLRequest(url: exampleBaseURL)) }
    }
}
