import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("MockReply")
struct MockReplyTests {
    @Test(
        "Retry-After is sent in whole seconds, rounded up",
        arguments: [
            (Duration.seconds(2), "2"), (.milliseconds(1500), "2"), (.milliseconds(1), "1"), (.zero, "0"),
        ]
    )
    func retryAfter(delay: Duration, header: String) async throws {
        let api = MockTransport(sequence: [.serviceUnavailable(retryAfter: delay), .tooManyRequests(retryAfter: delay)])
        let first = try await api.send(request(.get, "/"))
        let second = try await api.send(request(.get, "/"))
        #expect(first.1.statusCode == 503)
        #expect(first.1.value(forHTTPHeaderField: "Retry-After") == header)
        #expect(second.1.statusCode == 429)
        #expect(second.1.value(forHTTPHeaderField: "Retry-After") == header)
    }

    @Test("without a delay, 503 carries no Retry-After")
    func noRetryAfter() async throws {
        let (_, response) = try await MockTransport(reply: .serviceUnavailable()).send(request(.get, "/"))
        #expect(response.value(forHTTPHeaderField: "Retry-After") == nil)
    }

    @Test("json, text and data replies set their body, status and content type")
    func bodies() async throws {
        let api = MockTransport(sequence: [
            .json(User(id: "1", name: "Ada"), status: 201),
            .text("hello", status: 202),
            .data(Data([1, 2, 3]), headers: ["Content-Type": "application/octet-stream"]),
        ])
        let (json, created) = try await api.send(request(.get, "/"))
        #expect(created.statusCode == 201)
        #expect(created.value(forHTTPHeaderField: "Content-Type") == "application/json")
        #expect(try JSONDecoder().decode(User.self, from: json) == User(id: "1", name: "Ada"))
        let (text, accepted) = try await api.send(request(.get, "/"))
        #expect(accepted.statusCode == 202)
        #expect(String(decoding: text, as: UTF8.self) == "hello")
        #expect(accepted.value(forHTTPHeaderField: "Content-Type") == "text/plain; charset=utf-8")
        let (data, _) = try await api.send(request(.get, "/"))
        #expect(data == Data([1, 2, 3]))
    }

    @Test("header(_:_:) adds a header to responses, including a handler's")
    func header() async throws {
        let api = MockTransport(sequence: [
            .ok.header("ETag", "\"v1\""),
            MockReply.handler { _ in .status(201) }.header("Location", "/users/9"),
        ])
        #expect(try await api.send(request(.get, "/")).1.value(forHTTPHeaderField: "ETag") == "\"v1\"")
        let created = try await api.send(request(.post, "/")).1
        #expect(created.statusCode == 201)
        #expect(created.value(forHTTPHeaderField: "Location") == "/users/9")
    }

    @Test("failure replies throw the URL errors a network gives")
    func failures() async throws {
        let api = MockTransport(sequence: [.networkConnectionLost, .timedOut, .urlError(.cannotConnectToHost)])
        var codes: [URLError.Code] = []
        for _ in 0..<3 {
            do {
                _ = try await api.send(request(.get, "/"))
            } catch let error as URLError {
                codes.append(error.code)
            }
        }
        #expect(codes == [.networkConnectionLost, .timedOut, .cannotConnectToHost])
    }

    @Test("a delayed reply waits on the manual clock and a cancelled wait is counted", .timeLimit(.minutes(1)))
    func delayed() async throws {
        let clock = ManualClock()
        let api = MockTransport(reply: .json(["ok": true]).delayed(by: .seconds(30), on: clock))
        let answered = Task { try await api.send(request(.get, "/a")) }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(30))
        #expect(try await answered.value.1.statusCode == 200)

        let abandoned = Task { try await api.send(request(.get, "/b")) }
        await clock.waitForSleepers(count: 1)
        abandoned.cancel()
        await #expect(throws: CancellationError.self) { try await abandoned.value }
        #expect(api.cancellationCount == 1)
    }

    @Test("a hanging reply ends only with cancellation", .timeLimit(.minutes(1)))
    func hang() async throws {
        let arrived = Arrivals()
        let api = MockTransport(
            reply: .handler { _ in
                arrived.arrive()
                return .hang
            }
        )
        let call = Task { try await api.send(request(.get, "/")) }
        await arrived.wait(for: 1)
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(api.cancellationCount == 1)
    }
}
