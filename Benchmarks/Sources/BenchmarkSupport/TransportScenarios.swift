import AsyncHTTPClient
import Courier
import Foundation
import NIOCore
import NIOHTTP1

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Scenarios for what the transports cost: each runs serially against a loopback server started on first
/// use (in-process, so its cost is the same on both sides of a comparison), or times one step of a
/// transport's conversions in memory.
///
/// Counted with `InstructionCounts` (see RESULTS.md): the difference between a Courier scenario and its
/// bare counterpart, per call, is what Courier adds.
public enum TransportScenarios {
    /// The scenarios, by name.
    public static func all() -> [(name: String, calls: Calls)] {
        let serial: [(name: String, calls: Calls)] = [
            ("ahcBare", overLoopback { try await $0.bareAHCCalls($1) }),
            ("ahcFutureBare", overLoopback { try await $0.bareAHCFutureCalls($1) }),
            ("ahcCourier0", overLoopback { try await $0.ahcCalls($1, .none) }),
            ("ahcTransport", overLoopback { try await $0.calls($1, through: $0.ahcTransport) }),
            ("ahcStack", overLoopback { try await $0.ahcCalls($1, .defaultStack) }),
            ("ahcStackChild", overLoopback { try await $0.ahcCalls($1, .defaultStackWithChildTasks) }),
            ("ahcStackUntimed", overLoopback { try await $0.ahcCalls($1, .defaultStackWithoutTimeouts) }),
            ("ahcTimeout", overLoopback { try await $0.ahcCalls($1, .timeout) }),
            // The body a millisecond after the head: the body read waits, under the timeout's deadline.
            ("ahcCourier0LateBody", overLoopback { try await $0.ahcCalls($1, .none, path: "/late") }),
            ("ahcTimeoutLateBody", overLoopback { try await $0.ahcCalls($1, .timeout, path: "/late") }),
            // A typed `Request` with no middleware, without and with a per-request timeout (`Request.timeout`).
            ("ahcTyped0", overLoopback { try await $0.ahcTypedCalls($1, timeout: nil) }),
            ("ahcTypedTimeout", overLoopback { try await $0.ahcTypedCalls($1, timeout: .seconds(10)) }),
            ("sessionBare", overLoopback { try await $0.bareSessionCalls($1) }),
            ("sessionDelegate", overLoopback { try await $0.delegateSessionCalls($1) }),
            ("sessionTransport", overLoopback { try await $0.calls($1, through: $0.sessionTransport) }),
            // Courier over URLSessionTransport: no middleware, one timeout, and the recommended stack.
            ("sessionCourier0", overLoopback { try await $0.sessionCalls($1, .none) }),
            ("sessionTimeout", overLoopback { try await $0.sessionCalls($1, .timeout) }),
            ("sessionStack", overLoopback { try await $0.sessionCalls($1, .defaultStack) }),
        ]
        // The same, 16 at a time.
        let concurrent = serial.map { scenario in
            (name: scenario.name + "16", calls: fanningOut(scenario.calls, width: 16))
        }
        return serial + concurrent + [
            ("validate", validating()),
            ("urlOut", convertingURL()),
            ("headersOut", convertingHeaders()),
            ("responseIn", convertingResponse()),
            ("responseInDecoded8", decodingResponse(headers: nginxLikeFields)),
            ("responseIn8", convertingResponse(headers: nginxLikeFields)),
            ("responseInit12", initializingResponse(headers: loopbackResponseFields)),
        ]
    }

    /// Calls made with the process's loopback clients.
    static func overLoopback(_ calls: @escaping @Sendable (LoopbackClients, Int) async throws -> Void) -> Calls {
        { count in try await calls(LoopbackClients.shared(), count) }
    }

    /// Makes `count` calls in `width` child tasks, each making its share one after the other.
    static func fanningOut(_ calls: @escaping Calls, width: Int) -> Calls {
        { count in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<width {
                    group.addTask { try await calls(count / width + (worker < count % width ? 1 : 0)) }
                }
                try await group.waitForAll()
            }
        }
    }

    static let loopbackRequest: URLRequest = {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:8080/users/42")!)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.setValue("Bearer \(DefaultStack.token)", forHTTPHeaderField: "Authorization")
        return request
    }()

    static func validating() -> Calls {
        let request = loopbackRequest
        return { count in
            for _ in 0..<count {
                try RequestValidation.validate(request)
            }
        }
    }

    static func convertingURL() -> Calls {
        let request = loopbackRequest
        return { count in
            for _ in 0..<count {
                sink(HTTPClientRequest(url: request.url!.absoluteString))
            }
        }
    }

    static func convertingHeaders() -> Calls {
        let request = loopbackRequest
        return { count in
            for _ in 0..<count {
                var headers = NIOHTTP1.HTTPHeaders()
                if let fields = request.allHTTPHeaderFields {
                    for (name, value) in fields { headers.add(name: name, value: value) }
                }
                sink(headers)
            }
        }
    }

    /// Eight response fields as an API behind nginx sends them.
    static let nginxLikeFields: NIOHTTP1.HTTPHeaders = [
        "Content-Type": "application/json; charset=utf-8", "Content-Length": "22",
        "Date": "Sun, 22 Nov 2026 08:00:00 GMT", "Server": "nginx", "Cache-Control": "no-store",
        "Vary": "Accept-Encoding", "ETag": "\"33a64df551425fcc\"", "X-Request-ID": "f058ebd6",
    ]

    /// The 12 fields the loopback server answers with (``LoopbackServer/responseHeaders`` and `Content-Length`),
    /// as the dictionary `HTTPURLResponse` takes.
    static let loopbackResponseFields: [String: String] = {
        var fields: [String: String] = ["Content-Length": "\(Fixtures.body.utf8.count)"]
        for (name, value) in LoopbackServer.responseHeaders { fields[name] = value }
        return fields
    }()

    /// `HTTPURLResponse.init` alone, with `headers` made into its dictionary once, outside the loop: the part of
    /// the contract floor (bare AsyncHTTPClient + this) that no client returning an `HTTPURLResponse` avoids.
    static func initializingResponse(headers: [String: String]) -> Calls {
        let url = loopbackRequest.url!
        return { count in
            for _ in 0..<count {
                sink(HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: headers)!)
            }
        }
    }

    static func convertingResponse(
        headers: NIOHTTP1.HTTPHeaders = ["Content-Type": "application/json", "Content-Length": "22"]
    ) -> Calls {
        let url = loopbackRequest.url!
        return { count in
            for _ in 0..<count {
                var fields: [String: String] = [:]
                for (name, value) in headers {
                    fields[name] = fields[name].map { $0 + ", " + value } ?? value
                }
                sink(HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: fields)!)
            }
        }
    }
}

/// The scenarios over loopback.
extension LoopbackClients {
    private static let instance = LockedInstance()

    /// The clients of the transport scenarios, made once per process.
    static func shared() async throws -> LoopbackClients {
        if let clients = instance.value { return clients }
        let clients = try await LoopbackClients.start()
        instance.value = clients
        return clients
    }

    func bareAHCFutureCalls(_ count: Int) async throws {
        var outgoing = try HTTPClient.Request(url: request.url!, method: .GET)
        outgoing.headers.add(name: "Accept", value: "application/json")
        outgoing.headers.add(name: "Authorization", value: "Bearer \(DefaultStack.token)")
        for _ in 0..<count {
            let task = httpClient.execute(
                request: outgoing,
                delegate: ResponseAccumulator(request: outgoing),
                deadline: .now() + .seconds(30)
            )
            sink(try await task.futureResult.get())
        }
    }

    func bareAHCCalls(_ count: Int) async throws {
        for _ in 0..<count {
            sink(try await asyncHTTPClientGet())
        }
    }

    func bareSessionCalls(_ count: Int) async throws {
        for _ in 0..<count {
            sink(try await sessionGet())
        }
    }

    func delegateSessionCalls(_ count: Int) async throws {
        for _ in 0..<count {
            sink(try await delegateSessionGet())
        }
    }

    func calls(_ count: Int, through transport: some Transport) async throws {
        for _ in 0..<count {
            sink(try await transport.send(request))
        }
    }

    func sessionCalls(_ count: Int, _ configuration: CourierConfiguration) async throws {
        for _ in 0..<count {
            sink(try await courierGet(configuration, over: .urlSession))
        }
    }

    func ahcTypedCalls(_ count: Int, timeout: Duration?) async throws {
        let client = ahcCourier(.none)
        let typed = Request<Data>(method: .get, target: .url(request.url!), timeout: timeout) { data, _, _ in data }
        for _ in 0..<count {
            sink(try await client.send(typed))
        }
    }

    func ahcCalls(_ count: Int, _ configuration: CourierConfiguration, path: String? = nil) async throws {
        let client = ahcCourier(configuration)
        var request = request(for: configuration)
        if let path { request.url = URL(string: path, relativeTo: request.url)?.absoluteURL }
        for _ in 0..<count {
            sink(try await client.send(request))
        }
    }
}

/// The one `LoopbackClients` of the process; guarded by the lock.
private final class LockedInstance: @unchecked Sendable {
    private let lock = NSLock()
    private var clients: LoopbackClients?

    var value: LoopbackClients? {
        get { lock.withLock { clients } }
        set { lock.withLock { clients = newValue } }
    }
}
