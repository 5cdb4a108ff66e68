import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Fault endpoints", .timeLimit(.minutes(3)))
struct FaultTests {
    @Test("/status/:code answers that status with a small JSON body", arguments: [200, 201, 400, 404, 429, 500, 503])
    func status(code: Int) async throws {
        try await TestServers.withServer { server in
            for method in ["GET", "POST"] {
                let body = try await HTTP.json(
                    [String: Int].self,
                    server.url("/status/\(code)"),
                    method: method,
                    expectStatus: code
                )
                #expect(body == ["status": code])
            }
        }
    }

    @Test("/status/:code takes a text body and extra headers from the query")
    func statusBodyAndHeaders() async throws {
        try await TestServers.withServer { server in
            let url = server.url(
                "/status/418",
                query: ["body": "short and stout", "header": "X-One: 1", "header": "X-Two:2"]
            )
            let (data, response) = try await HTTP.send(url)
            #expect(response.statusCode == 418)
            #expect(String(decoding: data, as: UTF8.self) == "short and stout")
            #expect(response.value(forHTTPHeaderField: "X-One") == "1")
            #expect(response.value(forHTTPHeaderField: "X-Two") == "2")
            #expect(response.value(forHTTPHeaderField: "Content-Type")?.hasPrefix("text/plain") == true)
        }
    }

    @Test("/status/204 has no body; codes outside 200...599 are refused")
    func statusEdges() async throws {
        try await TestServers.withServer { server in
            let (data, response) = try await HTTP.send(server.url("/status/204"))
            #expect(response.statusCode == 204)
            #expect(data.isEmpty)
            for code in ["100", "199", "600", "abc"] {
                let (_, refused) = try await HTTP.send(server.url("/status/\(code)"))
                #expect(refused.statusCode == 400, "\(code)")
            }
        }
    }

    @Test("/delay/:ms answers no sooner than asked, and refuses waits above the cap")
    func delay() async throws {
        try await TestServers.withServer { server in
            let clock = ContinuousClock()
            let start = clock.now
            let body = try await HTTP.json([String: Int].self, server.url("/delay/120"))
            #expect(clock.now - start >= .milliseconds(120))
            #expect(body == ["delayedMs": 120])

            let (_, refused) = try await HTTP.send(server.url("/delay/5001"))
            #expect(refused.statusCode == 400)
        }
    }

    @Test("/hang ends when the client cancels, and the server sees the connection close")
    func hangEndsWhenClientCancels() async throws {
        try await TestServers.withServer { server in
            let key = UUID().uuidString
            let request = Task { try await HTTP.send(server.url("/hang", query: ["key": key])) }
            // The server has the request once `hanging` is 1: no sleeps, the server tells us.
            let arrived = try await HTTP.json(CounterSnapshot.self, server.url("/wait/\(key)?hanging=1"))
            #expect(arrived.hanging == 1)

            request.cancel()
            await #expect(throws: (any Error).self) { try await request.value }

            let ended = try await HTTP.json(CounterSnapshot.self, server.url("/wait/\(key)?hangsEnded=1"))
            #expect(ended.hanging == 0)
            #expect(ended.hangsEnded == 1)
        }
    }

    @Test("/hang does not hold up shutdown: the hanging request gets a 503")
    func hangEndsAtShutdown() async throws {
        let server = try await TestServers.start()
        let key = UUID().uuidString
        let request = Task { try await HTTP.send(server.url("/hang", query: ["key": key])) }
        _ = try await HTTP.json(CounterSnapshot.self, server.url("/wait/\(key)?hanging=1"))

        await server.shutdown()
        let (_, response) = try await request.value
        #expect(response.statusCode == 503)
    }

    @Test("/truncated makes URLSession fail: the body stops short of its Content-Length")
    func truncatedURLSession() async throws {
        try await TestServers.withServer { server in
            // On Linux, FoundationNetworking reports curl's "transfer closed with 900 bytes remaining
            // to read" as a URLError whose code is -1 (`.unknown`); the type is what is stable.
            await #expect(throws: URLError.self) {
                _ = try await HTTP.send(server.url("/truncated"))
            }
        }
    }

    @Test("/truncated declares 1000 bytes, sends 100 and closes (raw socket)")
    func truncatedRaw() async throws {
        try await TestServers.withServer { server in
            let reply = try await RawHTTP.get("/truncated", keepAlive: true, from: server)
            #expect(reply.status == 200)
            #expect(reply.header("Content-Length") == "1000")
            #expect(reply.body == Array(repeating: UInt8(ascii: "x"), count: 100))

            let custom = try await RawHTTP.get("/truncated?declared=50&sent=0", keepAlive: true, from: server)
            #expect(custom.header("Content-Length") == "50")
            #expect(custom.body.isEmpty)
        }
    }

    @Test("/flaky/:key fails N times with the given status, then succeeds with the attempt count")
    func flaky() async throws {
        try await TestServers.withServer { server in
            let key = UUID().uuidString
            let url = server.url("/flaky/\(key)?failures=2&status=500")
            let first = try await HTTP.json(FlakyResponse.self, url, expectStatus: 500)
            let second = try await HTTP.json(FlakyResponse.self, url, method: "POST", expectStatus: 500)
            let third = try await HTTP.json(FlakyResponse.self, url)
            #expect(first == FlakyResponse(key: key, attempts: 1, error: true))
            #expect(second == FlakyResponse(key: key, attempts: 2, error: true))
            #expect(third == FlakyResponse(key: key, attempts: 3, error: false))

            let counters = try await HTTP.json(CounterSnapshot.self, server.url("/count/\(key)"))
            #expect(counters.flakyAttempts == 3)
            #expect(counters.hits == 0)

            // Defaults: one failure, 503.
            let other = UUID().uuidString
            _ = try await HTTP.json(FlakyResponse.self, server.url("/flaky/\(other)"), expectStatus: 503)
            _ = try await HTTP.json(FlakyResponse.self, server.url("/flaky/\(other)"))
        }
    }

    @Test("/flaky/:key?retryAfter= sends Retry-After in seconds")
    func flakyRetryAfterSeconds() async throws {
        try await TestServers.withServer { server in
            let url = server.url("/flaky/\(UUID().uuidString)?failures=1&retryAfter=2")
            let (_, failed) = try await HTTP.send(url)
            #expect(failed.statusCode == 503)
            #expect(failed.value(forHTTPHeaderField: "Retry-After") == "2")
            let (_, succeeded) = try await HTTP.send(url)
            #expect(succeeded.statusCode == 200)
            #expect(succeeded.value(forHTTPHeaderField: "Retry-After") == nil)
        }
    }

    @Test("/flaky/:key?retryAfterDate= sends Retry-After as an HTTP-date that far ahead")
    func flakyRetryAfterDate() async throws {
        try await TestServers.withServer { server in
            let before = Date()
            let (_, failed) = try await HTTP.send(server.url("/flaky/\(UUID().uuidString)?retryAfterDate=30"))
            let after = Date()
            let header = try #require(failed.value(forHTTPHeaderField: "Retry-After"))

            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(secondsFromGMT: 0)
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
            let date = try #require(formatter.date(from: header), "not an IMF-fixdate: \(header)")
            #expect(formatter.string(from: date) == header)
            #expect(date >= before.addingTimeInterval(29))
            #expect(date <= after.addingTimeInterval(31))
        }
    }
}
