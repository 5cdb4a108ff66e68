import Courier
import CourierTesting
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One randomly drawn case of the stack invariants: a stack built from the built-in middleware in a random
/// order, a request, and a server on three origins whose answers are drawn from the same seed.
struct StackCase: CustomStringConvertible {
    /// One layer of the stack.
    enum Layer: CustomStringConvertible {
        case counting
        case logging
        case timeout(Duration)
        case retry(attempts: Int, immediate: Bool)
        case staticToken(header: String)
        case tokenProvider(header: String)
        case refresher(header: String)
        case validatingStatus
        case redirects
        case hedging
        case idempotencyKey
        /// `.caching`, with one `HTTPCache` shared by the case's two tenants.
        case caching
        /// `.rateLimiting`, with the limiter's longest wait.
        case rateLimiting(maximumWait: Duration)
        /// `.headers`, with a static credential in `header`.
        case headers(header: String)

        var description: String {
            switch self {
            case .counting: "counting"
            case .logging: "logging"
            case .timeout(let duration): "timeout(\(duration))"
            case .retry(let attempts, let immediate): "retry(\(attempts)\(immediate ? ", immediate" : ""))"
            case .staticToken(let header): "authenticating(token, \(header))"
            case .tokenProvider(let header): "authenticating(provider, \(header))"
            case .refresher(let header): "authenticating(refresher, \(header))"
            case .validatingStatus: "validatingStatus"
            case .redirects: "followingRedirects"
            case .hedging: "hedging"
            case .idempotencyKey: "idempotencyKey"
            case .caching: "caching"
            case .rateLimiting(let wait): "rateLimiting(maximumWait: \(wait))"
            case .headers(let header): "headers(\(header))"
            }
        }

        /// Whether the layer may send a request through the layers inside it more than once per call.
        var sendsMoreThanOnce: Bool {
            switch self {
            case .retry, .refresher, .redirects, .hedging: true
            default: false
            }
        }

        var credentialHeader: String? {
            switch self {
            case .staticToken(let header), .tokenProvider(let header), .refresher(let header), .headers(let header):
                header
            default: nil
            }
        }
    }

    /// The request's body.
    enum Body: CustomStringConvertible {
        case none, bytes, stream
        var description: String {
            switch self {
            case .none: "no body"
            case .bytes: "Data body"
            case .stream: "stream body"
            }
        }
    }

    /// How the request is made.
    enum Call: Equatable, CustomStringConvertible {
        /// `client.send`.
        case send
        /// `client.stream`, reading the body to its end.
        case stream
        /// `client.events`, reading events until the stream ends.
        case events
        /// `client.download` to a file of its own, resuming twice at most; `resumable` keeps a partial file.
        case download(resumable: Bool)

        var description: String {
            switch self {
            case .send: "send"
            case .stream: "stream"
            case .events: "events"
            case .download(let resumable): resumable ? "download(resumable)" : "download"
            }
        }

        var isDownload: Bool {
            if case .download = self { true } else { false }
        }
    }

    let seed: UInt64
    let layers: [Layer]
    let method: String
    let body: Body
    let idempotencyKey: Bool
    /// Whether the caller, having no key, sends an empty or blank `Idempotency-Key` (`order.key ?? ""`): no key,
    /// for every layer. Drawn apart from the rest.
    let blankIdempotencyKey: String?
    /// Whether the server treats the first token as revoked from the start.
    let firstTokenRevoked: Bool
    /// Whether the transport enforces the call's deadline itself, so that timeouts above layers that wait only
    /// within it run them without a child task. Drawn apart from the rest, so that a seed's other choices do
    /// not depend on it.
    let transportEnforcesDeadlines: Bool
    /// How the request is made; drawn apart from the rest, like `transportEnforcesDeadlines`.
    let call: Call
    /// The URL the call names: mostly the API (the client's base URL's origin), sometimes another origin (a
    /// pre-signed link, a CDN, another port or scheme of the API's host), which no credential may reach.
    /// Drawn apart from the rest too.
    let target: URL
    /// The server's quota: at most this many requests to the API per window of ``quotaWindow``, announced in
    /// `RateLimit-*` fields on every API answer. Drawn apart from the rest.
    let quota: Int
    static let quotaWindow = Duration.seconds(4)
    /// Whether the API's `200`s may be stored by a shared cache (`public`) or only by a private one.
    let publicResponses: Bool

    /// The URLs a call may name besides the API's.
    static let foreignTargets = [
        "https://other.example.test/orders", "http://api.example.test:8080/orders", "http://api.example.test/orders",
        "https://api.example.test:8443/orders", "https://cdn.example.test:443/orders?X-Amz-Signature=sig",
    ]

    static let bodyBytes = Data("payload-0123456789".utf8)

    init(seed: UInt64) {
        var random = SplitMix64.derived(seed: seed, 0)
        self.seed = seed
        var transportDraw = SplitMix64.derived(seed: seed, 3)
        transportEnforcesDeadlines = transportDraw.nextUnitInterval() < 0.5
        var callDraw = SplitMix64.derived(seed: seed, 4)
        let callRoll = callDraw.nextUnitInterval()
        switch callRoll {
        case ..<0.62: call = .send
        case ..<0.77: call = .stream
        case ..<0.9: call = .events
        default: call = .download(resumable: callDraw.nextUnitInterval() < 0.5)
        }
        var targetDraw = SplitMix64.derived(seed: seed, 5)
        target = URL(
            string: targetDraw.nextUnitInterval() < 0.7
                ? "https://api.example.test/orders"
                : Self.foreignTargets[Int(targetDraw.next() % UInt64(Self.foreignTargets.count))]
        )!
        func chance(_ p: Double) -> Bool { random.nextUnitInterval() < p }
        func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
        // Caching and rate limiting join from a stream of their own, so the other draws of a seed stay as they were.
        var layerDraw = SplitMix64.derived(seed: seed, 6)
        quota = 2 + Int(layerDraw.next() % 4)
        publicResponses = layerDraw.nextUnitInterval() < 0.5
        var extra: [Layer] = []
        if layerDraw.nextUnitInterval() < 0.3 { extra.append(.caching) }
        if layerDraw.nextUnitInterval() < 0.3 {
            extra.append(.rateLimiting(maximumWait: .seconds(Int64(2 + layerDraw.next() % 9))))
        }

        let headers = ["Authorization", "X-Access-Token", "X-Session-Token", "Api-Token", "X-API-Key"]
        var pool: [Layer] = []
        if chance(0.7) { pool.append(.counting) }
        if chance(0.3) { pool.append(.logging) }
        if chance(0.6) { pool.append(.timeout(.seconds(Int64(pick([5, 10, 30]))))) }
        if chance(0.6) { pool.append(.retry(attempts: pick([2, 3, 4]), immediate: chance(0.5))) }
        switch random.next() % 4 {
        case 0: pool.append(.staticToken(header: pick(headers)))
        case 1: pool.append(.tokenProvider(header: pick(headers)))
        default: pool.append(.refresher(header: pick(headers)))
        }
        if chance(0.2) { pool.append(.staticToken(header: "X-Tenant-Key")) }
        if chance(0.5) { pool.append(.timeout(.seconds(Int64(pick([1, 2, 4]))))) }
        if chance(0.7) { pool.append(.validatingStatus) }
        if chance(0.8) { pool.append(.redirects) }
        if chance(0.2) { pool.append(.hedging) }
        if chance(0.2) { pool.append(.idempotencyKey) }
        // Mostly the recommended order, sometimes shuffled: every invariant must hold in any order.
        if chance(0.5) {
            for index in pool.indices.reversed() where index > 0 {
                pool.swapAt(index, Int(random.next() % UInt64(index + 1)))
            }
        }
        for layer in extra {
            pool.insert(layer, at: Int(layerDraw.next() % UInt64(pool.count + 1)))
        }
        // A static credential in `.headers`, from a stream of its own too.
        var headersDraw = SplitMix64.derived(seed: seed, 7)
        if headersDraw.nextUnitInterval() < 0.3 {
            // Names no authenticating layer of the model uses: the fields would replace that layer's credential.
            let header = ["X-Partner-Token", "Cookie"][Int(headersDraw.next() % 2)]
            pool.insert(.headers(header: header), at: Int(headersDraw.next() % UInt64(pool.count + 1)))
        }
        layers = pool
        method = pick(["GET", "GET", "PUT", "POST", "POST", "DELETE", "PATCH"])
        body = method == "GET" || method == "DELETE" ? .none : pick([.bytes, .bytes, .stream])
        idempotencyKey = chance(0.2)
        firstTokenRevoked = chance(0.3)
        var blankKeyDraw = SplitMix64.derived(seed: seed, 8)
        blankIdempotencyKey =
            !idempotencyKey && blankKeyDraw.nextUnitInterval() < 0.2
            ? ["", " ", "\t"][Int(blankKeyDraw.next() % 3)] : nil
    }

    var hasTimeout: Bool {
        layers.contains { if case .timeout = $0 { true } else { false } }
    }

    /// The deadline the whole call must keep: that of a timeout with only layers outside it that never wait.
    var wholeCallDeadline: Duration? {
        for layer in layers {
            switch layer {
            case .timeout(let duration): return duration
            case .counting, .logging, .idempotencyKey, .validatingStatus, .staticToken, .tokenProvider, .headers:
                continue
            default: return nil
            }
        }
        return nil
    }

    var credentialHeaders: Set<String> {
        Set(layers.compactMap { $0.credentialHeader?.lowercased() })
    }

    var description: String {
        "seed \(seed): \(call) \(method) \(target.absoluteString) \(body), idempotency key: \(idempotencyKey), "
            + "blank key: \(blankIdempotencyKey.map { "\"\($0)\"" } ?? "none"), "
            + "first token revoked: "
            + "\(firstTokenRevoked), transport enforces deadlines: \(transportEnforcesDeadlines), quota: \(quota), "
            + "public: \(publicResponses); stack: \(layers.map(\.description).joined(separator: " → "))"
    }
}

/// What the model server saw: every request it received, with what it answered.
struct Reception: CustomStringConvertible, Sendable {
    let url: URL
    let method: String
    let headers: [String: String]
    let body: Data
    let answer: String
    /// Whether the server may have acted on the request (anything but a redirect or a rejection).
    let mayHaveProcessed: Bool
    /// When the request arrived, on the case's clock.
    let arrival: Duration
    /// For a request to the API: the quota window it fell in, and the `RateLimit-Remaining` its answer carries.
    var quotaWindow: Int? = nil
    var remainingSaid: Int? = nil
    /// Whether the answer is made at once (not a hang, a drop, or a delayed answer a timeout may cancel first).
    var answeredAtOnce = true
    /// Whether the answer's head reached the client: the transport returned it.
    var delivered = false

    /// The `RateLimit-Remaining` the client was told: that of an answer made at once whose head the transport
    /// returned. Made at once is not enough: a transport that reads a body whole throws for a body cut after
    /// the head, and the head is lost with it (seed 783961 of base 777777: the model counted the `0` of such a
    /// head as said, and the limiter, which never saw it, was blamed for the next request of the window). A
    /// delayed answer is left out even when delivered: at the instant a timeout ends, either may win.
    var remainingAnnounced: Int? { answeredAtOnce && delivered ? remainingSaid : nil }

    var origin: String {
        "\(url.scheme ?? "")://\(url.host ?? ""):\(url.port ?? (url.scheme == "https" ? 443 : 80))"
    }

    var description: String { "\(method) \(url.absoluteString) at \(arrival) → \(answer)" }
}

/// The server of one case: three origins, answers drawn from the case's seed in the order requests arrive.
final class StackModelServer: Sendable {
    static let apiOrigin = "https://api.example.test:443"
    static let origins = ["https://api.example.test", "https://other.example.test", "http://api.example.test:8080"]
    /// After this many requests, every answer is 200, so that every case ends.
    static let maximumReceptions = 24

    /// The versions of the file a download gets, different at every byte: A and B as long, C longer (so that
    /// only the validator tells A's parts from B's, and only the complete length C's when the validator lies).
    static let fileVersions = [1_000, 1_000, 1_400].enumerated().map { version, length in
        Data((0..<length).map { UInt8(($0 * 7 + version * 50) % 251) })
    }
    static let fileTags = ["\"A\"", "\"B\"", "\"C\""]

    let seed: UInt64
    let hasTimeout: Bool
    /// Whether the case's call is a download: its `200`s are then a file's versions, and range requests get parts.
    let servesDownloads: Bool
    let clock: ManualClock
    let receptions = Locked<[Reception]>([])
    /// Tokens the server rejects.
    let revoked: Locked<Set<String>>
    let quota: Int
    let cacheControl: String
    /// A text found in every credential of a tenant, and the tenant's name: the API's `200`s say whose they are.
    let tenantMarkers: [(marker: String, tenant: String)]
    /// Requests to the API per quota window.
    private let windowCounts = Locked<[Int: Int]>([:])

    init(
        case model: StackCase,
        clock: ManualClock,
        revoked: Set<String>,
        tenantMarkers: [(marker: String, tenant: String)] = []
    ) {
        self.seed = model.seed
        self.hasTimeout = model.hasTimeout
        self.servesDownloads = model.call.isDownload
        self.clock = clock
        self.revoked = Locked(revoked)
        self.quota = model.quota
        self.cacheControl = model.publicResponses ? "public, max-age=60" : "max-age=60"
        self.tenantMarkers = tenantMarkers
    }

    /// The server's transport: it records which answers' heads reached the client.
    var transport: any Transport {
        DeliveryRecordingTransport(
            base: MockTransport(.handler { [self] request in self.answer(request.urlRequest) }),
            server: self
        )
    }

    /// The header field that names the reception an answer belongs to.
    static let receptionField = "X-Model-Reception"

    /// `response`, the head of an answer of this server's, reached the client.
    func delivered(_ response: HTTPURLResponse) {
        guard let index = response.value(forHTTPHeaderField: Self.receptionField).flatMap(Int.init) else { return }
        receptions.withLock { $0[index].delivered = true }
    }

    private func answer(_ request: URLRequest) -> MockResponse {
        let body = request.readBody()
        let headers = request.allHTTPHeaderFields ?? [:]
        let index = receptions.withLock { $0.count }
        var random = SplitMix64.derived(seed: seed, 1, UInt64(index))
        func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
        let url = request.url!
        let isAPI = url.scheme == "https" && url.host == "api.example.test" && url.port == nil
        let credential = headers.first {
            ["authorization", "x-access-token", "x-session-token", "api-token", "x-api-key"].contains(
                $0.key.lowercased()
            )
        }
        let token = credential.map { $0.value.hasPrefix("Bearer ") ? String($0.value.dropFirst(7)) : $0.value }
        // An event stream's connection gets events where another call gets a body: one event, and then the
        // server closes the stream or the connection drops.
        let wantsEvents = request.value(forHTTPHeaderField: "Accept") == "text/event-stream"
        let tenant =
            tenantMarkers.first { marker in headers.values.contains { $0.contains(marker.marker) } }?.tenant
            ?? "anonymous"
        /// A `200` that a cache may store, saying whose it is.
        func stored(_ text: String) -> MockResponse {
            .text("\(text) for \(tenant)", headers: ["Cache-Control": cacheControl, "ETag": "\"\(index)\""])
        }
        /// A download's answer: version A, B or C of a file (see ``fileVersions``), mostly with a strong
        /// `ETag`, sometimes a weak one or none; to a range request mostly a part that starts at the byte asked for
        /// (sometimes one off) of the version `If-Range` names (sometimes another version's: a proxy that ignores
        /// `If-Range`), sometimes with a wrong complete length, a `416` or the whole file; the body cut on some.
        func download() -> (MockResponse, String) {
            let start = request.value(forHTTPHeaderField: "Range").flatMap {
                Int($0.dropFirst("bytes=".count).dropLast())
            }
            var version = Int(random.next() % UInt64(Self.fileVersions.count))
            let tagRoll = random.nextUnitInterval()
            var headers: [String: String] = [:]
            if tagRoll < 0.7 {
                headers["ETag"] = Self.fileTags[version]
            } else if tagRoll < 0.85 {
                headers["ETag"] = "W/" + Self.fileTags[version]
            }
            var from = 0
            if let start {
                let roll = random.nextUnitInterval()
                if roll < 0.1 {
                    let length = Self.fileVersions[version].count
                    return (.status(416, headers: ["Content-Range": "bytes */\(length)"]), "416")
                }
                if roll < 0.85 {
                    let named = request.value(forHTTPHeaderField: "If-Range").flatMap(Self.fileTags.firstIndex(of:))
                    if let named, random.nextUnitInterval() < 0.75 {
                        version = named
                        if tagRoll < 0.7 { headers["ETag"] = Self.fileTags[version] }
                    }
                    let shift = random.nextUnitInterval() < 0.15 ? Int(random.next() % 3) - 1 : 0
                    from = min(max(0, start + shift), Self.fileVersions[version].count - 1)
                }
            }
            let file = Self.fileVersions[version]
            let body = file.dropFirst(from)
            headers["Content-Length"] = "\(body.count)"
            if from > 0 {
                let complete = random.nextUnitInterval() < 0.1 ? file.count + 1 : file.count
                headers["Content-Range"] = "bytes \(from)-\(file.count - 1)/\(complete)"
            }
            let status = from > 0 ? 206 : 200
            let cut = random.nextUnitInterval() < 0.5 ? Int(random.next() % UInt64(body.count)) : nil
            let chunks: [MockChunk] = cut.map { [.data(body.prefix($0)), .drop()] } ?? [.data(body)]
            let tag = headers["ETag"] ?? "no tag"
            let what = "\(status) v\(version) \(tag) from \(from)\(cut.map { ", cut after \($0)" } ?? "")"
            return (.stream(chunks, status: status, headers: headers), what)
        }
        func events() -> (MockResponse, String) {
            random.nextUnitInterval() < 0.5
                ? (.events([.event("e\(index)", id: "\(index)")]), "200 events")
                : (.events([.event("e\(index)", id: "\(index)"), .drop()]), "200 events, dropped")
        }

        let reply: MockResponse
        let answer: String
        var processed = true
        // Whether the answer is made at once (not a hang, a drop, or a delayed answer a timeout may cancel first),
        // telling a rate limiter what is left of the quota if its head reaches the client.
        var answeredAtOnce = true
        if index >= Self.maximumReceptions {
            if wantsEvents {
                (reply, answer) = (.noContent, "204 (cap)")
            } else if servesDownloads {
                let headers = ["ETag": Self.fileTags[0], "Content-Length": "\(Self.fileVersions[0].count)"]
                (reply, answer) = (.stream([.data(Self.fileVersions[0])], headers: headers), "200 \"A\" (cap)")
            } else {
                (reply, answer) = (.text("done"), "200 (cap)")
            }
        } else if isAPI, let token, revoked.withLock({ $0.contains(token) }) {
            (reply, answer) = (
                .status(401, headers: ["WWW-Authenticate": "Bearer error=\"invalid_token\""]), "401 revoked"
            )
            processed = false
        } else if !isAPI && random.nextUnitInterval() < 0.25 {
            // Another origin rejects whatever it was sent: never the API's token's fault.
            (reply, answer) = (.status(401, headers: ["WWW-Authenticate": "Bearer"]), "401 foreign")
            processed = false
        } else if servesDownloads, request.value(forHTTPHeaderField: "Range") != nil, random.nextUnitInterval() < 0.7 {
            // Most range requests get a part (or a 416, or the whole file), so that resumption is well exercised.
            (reply, answer) = download()
        } else {
            let roll = random.nextUnitInterval()
            switch roll {
            case ..<0.35:
                (reply, answer) = wantsEvents ? events() : servesDownloads ? download() : (stored("ok"), "200")
            case ..<0.52:
                let status = pick([301, 302, 303, 307, 308])
                let target = "\(pick(Self.origins))/r\(random.next() % 4)"
                (reply, answer) = (.status(status, headers: ["Location": target]), "\(status) → \(target)")
                processed = false
            case ..<0.57:
                if isAPI, let token { revoked.withLock { _ = $0.insert(token) } }
                (reply, answer) = (.status(401, headers: ["WWW-Authenticate": "Bearer"]), "401")
                processed = false
            case ..<0.60:
                (reply, answer) = (.status(403), "403")
            case ..<0.67:
                let seconds = Int(random.next() % 3)
                (reply, answer) = (.status(429, headers: ["Retry-After": "\(seconds)"]), "429 retry after \(seconds)")
            case ..<0.74:
                (reply, answer) = (.status(503), "503")
            case ..<0.78:
                (reply, answer) = (.status(500), "500")
            case ..<0.86:
                let delay = Duration.milliseconds(Int64(250 * (1 + random.next() % 12)))
                let (now, what) = wantsEvents ? events() : servesDownloads ? download() : (stored("slow"), "200")
                (reply, answer) = (now.delayed(by: delay, on: clock), "\(what) after \(delay)")
                answeredAtOnce = false
            case ..<0.91 where hasTimeout:
                (reply, answer) = (.hang, "hang")
                answeredAtOnce = false
            default:
                (reply, answer) = (.urlError(.networkConnectionLost), "dropped")
                answeredAtOnce = false
            }
        }
        var reception = Reception(
            url: url,
            method: request.httpMethod ?? "GET",
            headers: headers,
            body: body,
            answer: answer,
            mayHaveProcessed: processed,
            arrival: clock.now.offset,
            answeredAtOnce: answeredAtOnce
        )
        var announced = reply
        if isAPI {
            // Fixed windows of the quota from the clock's start; every API answer states what is left of its
            // window and, rounded up to whole seconds, when the next one starts.
            let window = StackCase.quotaWindow
            let now = clock.now.offset
            let number = Int(now / window)
            let count = windowCounts.withLock { counts -> Int in
                counts[number, default: 0] += 1
                return counts[number]!
            }
            let untilNext = window * (number + 1) - now
            let (seconds, attoseconds) = untilNext.components
            let reset = seconds + (attoseconds > 0 ? 1 : 0)
            let remaining = max(0, quota - count)
            reception.quotaWindow = number
            announced = reply.header("RateLimit-Limit", "\(quota)").header("RateLimit-Remaining", "\(remaining)")
                .header("RateLimit-Reset", "\(reset)")
            reception.remainingSaid = remaining
            // A 429 asks to come back no sooner than the window's end: Retry-After takes precedence over
            // RateLimit-Reset (the draft standard), and a server that said less would invite the very requests the
            // quota forbids. Not only with no quota left: a 429 that said 1 remaining and Retry-After 2 before a
            // reset in 3 let the limiter start a new window at 2 s, by the standard, and the server counted the
            // requests it then sent in the old one (seed 3221306107 failed CI so).
            if answer.hasPrefix("429"), let said = Int(answer.split(separator: " ").last ?? ""), said < reset {
                announced = announced.header("Retry-After", "\(reset)")
            }
        }
        let position = receptions.withLock { receptions -> Int in
            receptions.append(reception)
            return receptions.count - 1
        }
        return announced.header(Self.receptionField, "\(position)")
    }
}

/// The model server's transport: marks an answer as delivered when its head reaches the client, the
/// transport having returned it (a body that streams may still fail after).
private struct DeliveryRecordingTransport: Transport {
    let base: MockTransport
    let server: StackModelServer

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let (data, response) = try await base.send(request)
        server.delivered(response)
        return (data, response)
    }

    func stream(_ request: URLRequest) async throws -> (StreamedBody, HTTPURLResponse) {
        let (body, response) = try await base.stream(request)
        server.delivered(response)
        return (body, response)
    }
}
