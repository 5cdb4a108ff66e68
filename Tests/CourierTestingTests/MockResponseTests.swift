import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("MockResponse", .timeLimit(.minutes(1)))
struct MockResponseTests {
    @Test(
        "Retry-After is sent in whole seconds, rounded up",
        arguments: [
            (Duration.seconds(2), "2"), (.milliseconds(1500), "2"), (.milliseconds(1), "1"), (.zero, "0"),
        ]
    )
    func retryAfter(delay: Duration, header: String) async throws {
        let api = MockTransport(.serviceUnavailable(retryAfter: delay), then: .tooManyRequests(retryAfter: delay))
        let first = try await api.send(request(.get, "/"))
        let second = try await api.send(request(.get, "/"))
        #expect(first.1.statusCode == 503)
        #expect(first.1.value(forHTTPHeaderField: "Retry-After") == header)
        #expect(second.1.statusCode == 429)
        #expect(second.1.value(forHTTPHeaderField: "Retry-After") == header)
    }

    @Test("without a delay, 503 carries no Retry-After")
    func noRetryAfter() async throws {
        let (_, response) = try await MockTransport(.serviceUnavailable()).send(request(.get, "/"))
        #expect(response.value(forHTTPHeaderField: "Retry-After") == nil)
    }

    @Test("json, text and raw responses set their body, status and content type")
    func bodies() async throws {
        let api = MockTransport(
            .json(User(id: "1", name: "Ada"), status: 201),
            then: .text("hello", status: 202),
            MockResponse(headers: ["Content-Type": "application/octet-stream"], body: Data([1, 2, 3])),
            .json(#"{"a":1}"#, status: 203)
        )
        let (json, created) = try await api.send(request(.get, "/"))
        #expect(created.statusCode == 201)
        #expect(created.value(forHTTPHeaderField: "Content-Type") == "application/json")
        #expect(try JSONDecoder().decode(User.self, from: json) == User(id: "1", name: "Ada"))
        let (text, accepted) = try await api.send(request(.get, "/"))
        #expect(accepted.statusCode == 202)
        #expect(String(decoding: text, as: UTF8.self) == "hello")
        #expect(accepted.value(forHTTPHeaderField: "Content-Type") == "text/plain; charset=utf-8")
        let (data, raw) = try await api.send(request(.get, "/"))
        #expect(data == Data([1, 2, 3]))
        #expect(raw.statusCode == 200)
        #expect(raw.value(forHTTPHeaderField: "Content-Type") == "application/octet-stream")
        let (jsonText, nonAuthoritative) = try await api.send(request(.get, "/"))
        #expect(String(decoding: jsonText, as: UTF8.self) == #"{"a":1}"#)
        #expect(nonAuthoritative.statusCode == 203)
        #expect(nonAuthoritative.value(forHTTPHeaderField: "Content-Type") == "application/json")
    }

    @Test(
        "the named responses carry their status and headers",
        arguments: [
            (MockResponse.ok, 200, [String: String]()),
            (.noContent, 204, [:]),
            (.serverError, 500, [:]),
            (.status(418, body: "teapot", headers: ["X-A": "1"]), 418, ["X-A": "1"]),
            (.unauthorized(), 401, ["WWW-Authenticate": "Bearer"]),
            (.unauthorized(challenge: #"Basic realm="x""#), 401, ["WWW-Authenticate": #"Basic realm="x""#]),
        ]
    )
    func named(response: MockResponse, status: Int, headers: [String: String]) async throws {
        let (_, answer) = try await response.httpResponse(for: request(.get, "/"))
        #expect(answer.statusCode == status)
        for (name, value) in headers { #expect(answer.value(forHTTPHeaderField: name) == value) }
    }

    @Test("header(_:_:) adds a header to responses, including a handler's")
    func header() async throws {
        let api = MockTransport(
            .ok.header("ETag", "\"v1\""),
            then: .handler { _ in .status(201) }.header("Location", "/users/9")
        )
        #expect(try await api.send(request(.get, "/")).1.value(forHTTPHeaderField: "ETag") == "\"v1\"")
        let created = try await api.send(request(.post, "/")).1
        #expect(created.statusCode == 201)
        #expect(created.value(forHTTPHeaderField: "Location") == "/users/9")
    }

    @Test("failures throw the URL errors a network gives, or the error given")
    func failures() async throws {
        struct Refused: Error {}
        let api = MockTransport(
            .networkConnectionLost,
            then: .timedOut,
            .urlError(.cannotConnectToHost),
            .failure(Refused()).header("X-Ignored", "1")
        )
        var codes: [URLError.Code] = []
        for _ in 0..<3 {
            do {
                _ = try await api.send(request(.get, "/"))
            } catch let error as URLError {
                codes.append(error.code)
            }
        }
        #expect(codes == [.networkConnectionLost, .timedOut, .cannotConnectToHost])
        await #expect(throws: Refused.self) { try await api.send(request(.get, "/")) }
    }

    @Test("a delayed response waits on the manual clock and a cancelled wait is counted")
    func delayed() async throws {
        let clock = ManualClock()
        let api = MockTransport(.json(["ok": true]).delayed(by: .seconds(30), on: clock))
        let answered = Task { try await api.send(request(.get, "/a")) }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(30))
        #expect(try await answered.join().1.statusCode == 200)

        await expectCancelledWhileAsleep(Task { try await api.send(request(.get, "/b")) }, on: clock)
        #expect(api.cancellationCount == 1)
    }

    @Test("a hanging response ends only with cancellation")
    func hang() async throws {
        let arrived = Arrivals()
        let api = MockTransport { _ in
            arrived.arrive()
            return .hang
        }
        let call = Task { try await api.send(request(.get, "/")) }
        await arrived.wait(for: 1)
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.join() }
        #expect(api.cancellationCount == 1)
    }
}
