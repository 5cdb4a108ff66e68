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
            ("ahcBare", { count in try await LoopbackClients.shared().ahcBare(count) }),
            ("ahcCourier0", { count in try await LoopbackClients.shared().ahcCourier(count, stack: false) }),
            ("ahcTransport", { count in try await LoopbackClients.shared().ahcTransport(count) }),
            ("ahcStack", { count in try await LoopbackClients.shared().ahcCourier(count, stack: true) }),
            ("ahcStackUntimed", { count in try await LoopbackClients.shared().ahcUntimed(count) }),
            ("ahcTimeout", { count in try await LoopbackClients.shared().ahcTimeout(count) }),
            ("sessionBare", { count in try await LoopbackClients.shared().sessionBare(count) }),
            ("sessionTransport", { count in try await LoopbackClients.shared().sessionTransport(count) }),
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
            (
                "responseIn8",
                convertingResponse(headers: [
                    "Content-Type": "application/json; charset=utf-8", "Content-Length": "22",
                    "Date": "Sun, 22 Nov 2026 08:00:00 GMT", "Server": "nginx", "Cache-Control": "no-store",
                    "Vary": "Accept-Encoding", "ETag": "\"33a64df551425fcc\"", "X-Request-ID": "f058ebd6",
                ])
            ),
        ]
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

/// The loopback server and the clients of the transport scenarios, made once per process.
final class LoopbackClients: Sendable {
    let server: LoopbackServer
    let request: URLRequest
    let httpClient: HTTPClient
    let ahcRequest: HTTPClientRequest
    let ahcTransport: AsyncHTTPClientTransport
    let ahcCourier: Client
    let ahcStackCourier: Client
    let ahcUntimedCourier: Client
    let ahcTimeoutCourier: Client
    let session: URLSession
    let sessionTransport: URLSessionTransport

    private static let instance = LockedInstance()

    static func shared() async throws -> LoopbackClients {
        if let clients = instance.value { return clients }
        let clients = LoopbackClients(server: try await LoopbackServer.start())
        instance.value = clients
        return clients
    }

    private init(server: LoopbackServer) {
        self.server = server
        var request = URLRequest(url: URL(string: server.url)!)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.setValue("Bearer \(DefaultStack.token)", forHTTPHeaderField: "Authorization")
        self.request = request
        httpClient = HTTPClient(
            eventLoopGroup: HTTPClient.defaultEventLoopGroup,
            configuration: AsyncHTTPClientTransport.defaultConfiguration
        )
        var ahcRequest = HTTPClientRequest(url: server.url)
        ahcRequest.headers.add(name: "Accept", value: "application/json")
        ahcRequest.headers.add(name: "Authorization", value: "Bearer \(DefaultStack.token)")
        self.ahcRequest = ahcRequest
        ahcTransport = AsyncHTTPClientTransport(client: httpClient)
        ahcCourier = Client(transport: ahcTransport)
        ahcStackCourier = Client(transport: ahcTransport, middleware: DefaultStack.middleware())
        ahcUntimedCourier = Client(
            transport: ahcTransport,
            middleware: DefaultStack.middleware().filter { $0.name != "timeout" }
        )
        ahcTimeoutCourier = Client(transport: ahcTransport, middleware: [.timeout(.seconds(10))])
        session = URLSession(configuration: .default)
        sessionTransport = URLSessionTransport()
    }

    func ahcBare(_ count: Int) async throws {
        for _ in 0..<count {
            let response = try await httpClient.execute(ahcRequest, timeout: .seconds(30))
            sink(try await response.body.collect(upTo: 1 << 20))
        }
    }

    func ahcTransport(_ count: Int) async throws {
        for _ in 0..<count {
            sink(try await ahcTransport.send(request))
        }
    }

    func ahcCourier(_ count: Int, stack: Bool) async throws {
        let client = stack ? ahcStackCourier : ahcCourier
        for _ in 0..<count {
            sink(try await client.send(request))
        }
    }

    func ahcUntimed(_ count: Int) async throws {
        for _ in 0..<count {
            sink(try await ahcUntimedCourier.send(request))
        }
    }

    func ahcTimeout(_ count: Int) async throws {
        for _ in 0..<count {
            sink(try await ahcTimeoutCourier.send(request))
        }
    }

    func sessionBare(_ count: Int) async throws {
        for _ in 0..<count {
            sink(try await session.data(for: request))
        }
    }

    func sessionTransport(_ count: Int) async throws {
        for _ in 0..<count {
            sink(try await sessionTransport.send(request))
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
