import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A seeded, model-based test of ``TokenRefresher`` behind `.authenticating(with:)`.
///
/// Each case draws a random script from its seed: requests started, answered by a server that accepts only its
/// current set of valid tokens (and none past its expiry), tokens revoked at the server, tokens stored with
/// `setToken`, refreshes that succeed (with a token the server accepts, or one it never will), fail, return an
/// unusable token or simply take their time, a manual clock moved past expiries and refresh windows, and waiters
/// cancelled. After every step the test waits until nothing can move without it (every request is held by the
/// server, waiting for a refresh, or finished; a refresh runs exactly when one is held by the test), so the
/// interleaving is the script's, not the scheduler's. Then it answers and completes everything, and checks:
///
/// 1. A request is never sent again with the token the server rejected for it, nor an older one: its retry
///    carries a strictly newer version. At most one retry.
/// 2. Refreshes never overlap, and a refresh replaces the token current when it starts.
/// 3. A token is refreshed once per wave of rejections: again only after a refresh of it failed.
/// 4. No more refreshes start within the window than the limit allows.
/// 5. Nothing hangs: once every refresh is completed and every request answered, every request has finished.
/// 6. Every outcome is explained: success after an accepted answer, `authenticationRejected` after two
///    rejections, `refreshFailed` carrying the error of a failed refresh of the request's own token,
///    `tooManyRefreshes` only with the window full, `CancellationError` only when the test cancelled it.
/// 7. A failed refresh fails every waiter with its one error.
/// 8. A cancelled waiter does not cancel the shared refresh; its result is stored all the same.
/// 9. A refresh starts only for a token the server rejected, or one that is due: `min(leeway, lifetime / 2)`
///    or less left of the lifetime it arrived with (so a token just received is never refreshed at once).
///
/// Set `TOKEN_REFRESHER_MODEL_SEED=0x…` to replay one case (the failure message prints it), and
/// `TOKEN_REFRESHER_MODEL_CASES` to run more or fewer.
@Suite("TokenRefresher: seeded model-based test", .timeLimit(.minutes(3)))
struct TokenRefresherModelTests {
    @Test("random interleavings of requests, revocations, setToken, refresh outcomes, expiry and cancellation")
    func randomInterleavings() async {
        let environment = ProcessInfo.processInfo.environment
        let replay = environment["TOKEN_REFRESHER_MODEL_SEED"].flatMap { UInt64($0.dropFirst(2), radix: 16) }
        let count = environment["TOKEN_REFRESHER_MODEL_CASES"].flatMap { Int($0) } ?? 2_000
        let seeds = replay.map { [$0] } ?? (0..<UInt64(count)).map { SplitMix64.mix(0x70CE_4E11 &+ $0) }
        var stepsRun = 0
        var coverage: [String: Int] = [:]
        for seed in seeds {
            let modelCase = ModelCase(seed: seed)
            let problems = await modelCase.run()
            stepsRun += modelCase.stepCount
            coverage.merge(modelCase.coverage, uniquingKeysWith: +)
            guard problems.isEmpty else {
                let hex = "0x" + String(seed, radix: 16)
                Issue.record(
                    """
                    seed \(hex) (replay with TOKEN_REFRESHER_MODEL_SEED=\(hex)):
                    \(problems.joined(separator: "\n"))
                    script:
                    \(modelCase.trace.joined(separator: "\n"))
                    """
                )
                return
            }
        }
        #expect(stepsRun > seeds.count * 10)  // the cases did run their scripts
        if ProcessInfo.processInfo.environment["TOKEN_REFRESHER_MODEL_COVERAGE"] != nil {
            print(coverage.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: "\n"))
        }
        guard replay == nil else { return }
        // The scripts reach every situation the invariants are about, each in at least 1 % of the cases.
        for situation in ModelCase.situations {
            #expect(
                coverage[situation, default: 0] >= seeds.count / 100,
                "\(situation): \(coverage[situation, default: 0])"
            )
        }
    }
}

// MARK: - The world of one case

private struct ModelRefreshError: Error, Equatable {
    let index: Int
}

/// What happened, in the order it happened, across the test, the server, the refresh closure and the requests.
private enum Event {
    case started(request: Int, current: String)
    case sent(request: Int, token: String?)
    case answered(request: Int, token: String?, accepted: Bool)
    case refreshStarted(index: Int, replaced: TokenRefresher.Token, current: String, at: Duration)
    case refreshCompleted(index: Int, replaced: String, failed: Bool, dropped: Bool)
    case finished(request: Int, outcome: Result<Int, any Error>, at: Duration)
}

/// The log of events and the signal that wakes the test when something moved.
private final class World: Sendable {
    let clock = ManualClock()
    let changes = ChangeSignal()
    private let events = LockedState<(log: [Event], finished: Int)>(([], 0))

    var log: [Event] { events.withLock { $0.log } }

    /// How many requests have finished.
    var finishedCount: Int { events.withLock { $0.finished } }

    func record(_ event: Event) {
        events.withLock { events in
            events.log.append(event)
            if case .finished = event { events.finished += 1 }
        }
        changes.signal()
    }
}

/// A server that accepts only the tokens in its valid set that have not expired, and holds every request until
/// the test answers it.
private final class ModelServer: Transport {
    private struct Held {
        let serial: Int
        let request: Int
        let token: String?
        let continuation: CheckedContinuation<Bool, any Error>
    }

    private struct State {
        var valid: Set<String> = []
        var expiresAt: [String: Duration] = [:]
        var held: [Held] = []
        var nextSerial = 0
    }

    private let world: World
    private let state = LockedState(State())

    init(world: World) {
        self.world = world
    }

    var heldCount: Int { state.withLock { $0.held.count } }

    /// Accepts `token` from now on, until `lifetime` (if positive) has passed.
    func issue(_ token: String, lifetime: Duration?) {
        let now = world.clock.now.offset
        state.withLock { state in
            state.valid.insert(token)
            if let lifetime, lifetime > .zero { state.expiresAt[token] = now + lifetime }
        }
    }

    func revoke(_ token: String) {
        _ = state.withLock { $0.valid.remove(token) }
    }

    /// Answers the held request at `index` (in arrival order) as the server would now.
    func answer(at index: Int) {
        let now = world.clock.now.offset
        let (held, accepted) = state.withLock { state in
            let held = state.held.remove(at: index)
            let token = held.token ?? ""
            let accepted = state.valid.contains(token) && state.expiresAt[token].map { now < $0 } ?? true
            return (held, accepted)
        }
        world.record(.answered(request: held.request, token: held.token, accepted: accepted))
        held.continuation.resume(returning: accepted)
    }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let id = request.value(forHTTPHeaderField: "X-Model-Request").flatMap { Int($0) } ?? -1
        let token = request.value(forHTTPHeaderField: "Authorization").map { String($0.dropFirst("Bearer ".count)) }
        let serial = state.withLock { state in
            defer { state.nextSerial += 1 }
            return state.nextSerial
        }
        world.record(.sent(request: id, token: token))
        let accepted = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Bool, any Error>) in
                let cancelled = state.withLock { state in
                    if Task.isCancelled { return true }
                    state.held.append(Held(serial: serial, request: id, token: token, continuation: continuation))
                    return false
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
                world.changes.signal()
            }
        } onCancel: {
            let held = state.withLock { state in
                state.held.firstIndex { $0.serial == serial }.map { state.held.remove(at: $0) }
            }
            held?.continuation.resume(throwing: CancellationError())
        }
        let response = HTTPURLResponse(
            url: request.url!,
            statusCode: accepted ? 200 : 401,
            httpVersion: "HTTP/1.1",
            headerFields: [:]
        )!
        return (Data(), response)
    }
}

/// The refresh closure: records each refresh and holds it until the test completes it.
private final class ModelRefreshes: Sendable {
    private struct Pending {
        let index: Int
        let replaced: TokenRefresher.Token
        let continuation: CheckedContinuation<Result<TokenRefresher.Token, any Error>, Never>
    }

    private struct State {
        var pending: Pending?
        var started = 0
        var running = 0
        var mostRunning = 0
        var cancelledRefreshes = 0
    }

    private let world: World
    private let state = LockedState(State())
    let refresher = LockedState<TokenRefresher?>(nil)

    init(world: World) {
        self.world = world
    }

    /// The replaced token of the refresh held now, if any.
    var pending: (index: Int, replaced: TokenRefresher.Token)? {
        state.withLock { state in state.pending.map { ($0.index, $0.replaced) } }
    }

    /// The most refreshes that ran at once.
    var mostRunning: Int { state.withLock { $0.mostRunning } }

    /// How many refreshes found their task cancelled.
    var cancelledRefreshes: Int { state.withLock { $0.cancelledRefreshes } }

    func refresh(_ replaced: TokenRefresher.Token) async throws -> TokenRefresher.Token {
        let current = refresher.withLock { $0 }?.token.value ?? ""
        let now = world.clock.now.offset
        let result = await withCheckedContinuation { continuation in
            let index = state.withLock { state in
                state.started += 1
                state.running += 1
                state.mostRunning = max(state.mostRunning, state.running)
                return state.started
            }
            // Recorded before the refresh can be seen as pending: the script completes only a pending refresh,
            // so its completion is never logged ahead of its start (a busy machine showed that order).
            world.record(.refreshStarted(index: index, replaced: replaced, current: current, at: now))
            state.withLock { state in
                state.pending = Pending(index: index, replaced: replaced, continuation: continuation)
            }
            world.changes.signal()
        }
        state.withLock { state in
            state.running -= 1
            if Task.isCancelled { state.cancelledRefreshes += 1 }
        }
        return try result.get()
    }

    /// Completes the refresh held now with `result`.
    func complete(with result: Result<TokenRefresher.Token, any Error>) {
        let pending = state.withLock { state in
            defer { state.pending = nil }
            return state.pending
        }
        pending?.continuation.resume(returning: result)
    }
}

// MARK: - One case

private final class ModelCase {
    let seed: UInt64
    private(set) var trace: [String] = []
    private(set) var stepCount = 0
    /// How often each situation of ``situations`` (and a few more) happened in this case.
    private(set) var coverage: [String: Int] = [:]

    /// Situations every run of the default seeds must reach.
    static let situations = [
        "answered 200", "authenticationRejected", "refreshFailed", "tooManyRefreshes", "cancelled while waiting",
        "cancelled while held", "retried after a rejection", "refresh before sending", "failed refresh with waiters",
        "refresh dropped after setToken", "refresh of a token rejected while an older refresh ran",
    ]

    private var random: SplitMix64
    private let world: World
    private let server: ModelServer
    private let refreshes: ModelRefreshes
    private let refresher: TokenRefresher
    private let client: Client
    private let limit: TokenRefresher.RefreshLimit
    private let leeway: Duration

    private var tasks: [Int: Task<Void, Never>] = [:]
    private var finished: Set<Int> = []
    private var cancelled: Set<Int> = []
    /// The current token when each request started: what it holds if it waits before ever being sent.
    private var tokenAtStart: [Int: String] = [:]
    /// Every token stored, by value: its version and the lifetime it arrived with.
    private var versions: [String: Int] = [:]
    private var lifetimes: [String: Duration?] = [:]
    private let initialToken = "t0"
    private var minted = 0
    private var problems: [String] = []

    private static let lifetimeChoices: [Duration?] = [
        nil, .zero, .seconds(-3), .seconds(1), .seconds(20), .seconds(40), .seconds(60), .seconds(3600),
    ]

    init(seed: UInt64) {
        self.seed = seed
        var random = SplitMix64(seed: seed)
        limit = .init(maximum: Int.random(in: 2...4, using: &random), per: .seconds(30))
        leeway = [Duration.seconds(10), .seconds(30)].randomElement(using: &random)!
        let initialLifetime: Duration? = [nil, .seconds(-10), .seconds(20), .seconds(60)].randomElement(using: &random)!
        let validating = Bool.random(using: &random)
        self.random = random

        let world = World()
        let server = ModelServer(world: world)
        let refreshes = ModelRefreshes(world: world)
        let refresher = TokenRefresher(
            token: .init("t0", expiresIn: initialLifetime),
            leeway: leeway,
            limit: limit,
            clock: world.clock
        ) { replaced in
            try await refreshes.refresh(replaced)
        }
        refreshes.refresher.withLock { $0 = refresher }
        refresher.onChange { world.changes.signal() }
        self.world = world
        self.server = server
        self.refreshes = refreshes
        self.refresher = refresher
        client = Client(
            baseURL: exampleBaseURL,
            transport: server,
            middleware: validating
                ? [.authenticating(with: refresher), .validatingStatus()] : [.authenticating(with: refresher)]
        )
        server.issue(initialToken, lifetime: initialLifetime)
        versions[initialToken] = 1
        lifetimes[initialToken] = initialLifetime
        trace.append(
            "limit \(limit.maximum)/30 s, leeway \(leeway), t0 lifetime \(String(describing: initialLifetime)), "
                + (validating ? "validatingStatus inside" : "no validation")
        )
    }

    func run() async -> [String] {
        let steps = Int.random(in: 8...30, using: &random)
        for _ in 0..<steps {
            await step()
            stepCount += 1
        }
        await drain()
        checkLog()
        refreshes.refresher.withLock { $0 = nil }  // the refresher's closure holds `refreshes`: break the cycle
        return problems
    }

    // MARK: Steps

    private func step() async {
        let held = server.heldCount
        let pending = refreshes.pending
        let unfinished = tasks.keys.filter { !finished.contains($0) && !cancelled.contains($0) }
        var choices: [(weight: Int, action: () async -> Void)] = [
            (5, revoke), (5, setToken), (8, advanceClock),
        ]
        if tasks.count < 8 { choices.append((25, startRequest)) }
        if held > 0 { choices.append((25, answer)) }
        if pending != nil { choices.append((20, completeRefresh)) }
        if !unfinished.isEmpty { choices.append((5, { await self.cancel(unfinished.sorted()) })) }
        var roll = Int.random(in: 0..<choices.map(\.weight).reduce(0, +), using: &random)
        for choice in choices {
            if roll < choice.weight {
                await choice.action()
                break
            }
            roll -= choice.weight
        }
        await settle()
    }

    private func startRequest() async {
        let id = tasks.count
        let current = refresher.token.value
        tokenAtStart[id] = current
        world.record(.started(request: id, current: current))
        trace.append("start request \(id) (current \(current))")
        var request = URLRequest(url: URL(string: "https://api.example.test/r")!)
        request.setValue("\(id)", forHTTPHeaderField: "X-Model-Request")
        let (client, world) = (self.client, self.world)
        tasks[id] = Task {
            let outcome: Result<Int, any Error>
            do {
                outcome = .success(try await client.send(request).1.statusCode)
            } catch {
                outcome = .failure(error)
            }
            world.record(.finished(request: id, outcome: outcome, at: world.clock.now.offset))
        }
    }

    private func answer() async {
        let index = Int.random(in: 0..<server.heldCount, using: &random)
        trace.append("answer held request #\(index)")
        server.answer(at: index)
    }

    private func completeRefresh() async {
        guard let (index, replaced) = refreshes.pending else { return }
        let dropped = replaced.value != refresher.token.value
        // A request waiting for an early refresh (it has sent nothing yet) of a token that has not expired sends
        // that token all the same when the refresh fails; only the others fail with the refresh's error.
        let unexpired =
            refresher.token.value == replaced.value && (refresher.token.expiresIn.map { $0 > .zero } ?? true)
        let neverSent = unsentRequests()
        let waiting = waitingRequests().filter { !(unexpired && neverSent.contains($0)) }
        let roll = Int.random(in: 0..<100, using: &random)
        minted += 1
        let result: Result<TokenRefresher.Token, any Error>
        let failed: Bool
        switch roll {
        case 0..<55:
            let lifetime = Self.lifetimeChoices.randomElement(using: &random)!
            let token = TokenRefresher.Token("r\(minted)", expiresIn: lifetime)
            server.issue(token.value, lifetime: lifetime)
            lifetimes[token.value] = lifetime
            result = .success(token)
            failed = false
        case 55..<70:
            let token = TokenRefresher.Token("x\(minted)")  // the server never accepts it
            lifetimes[token.value] = Duration?.none
            result = .success(token)
            failed = false
        case 70..<95:
            result = .failure(ModelRefreshError(index: index))
            failed = true
        default:
            result = .success(TokenRefresher.Token("bad\r\n\(minted)"))
            failed = true
        }
        let shown = (try? result.get()).map { "\($0.value.debugDescription) \(String(describing: $0.expiresIn))" }
        trace.append(
            "complete refresh \(index) of \(replaced.value): \(shown ?? "failure")" + (dropped ? " (dropped)" : "")
        )
        world.record(.refreshCompleted(index: index, replaced: replaced.value, failed: failed, dropped: dropped))
        refreshes.complete(with: result)
        await settle()

        if !dropped, case .success(let token) = result, !failed, refresher.token.value != token.value {
            problems.append("refresh \(index) succeeded but its token was not stored")
        }
        if !dropped && failed {
            // Every request that waited for it fails with its error.
            for id in waiting where !finished.contains(id) {
                problems.append("request \(id) waited for failed refresh \(index) and is still waiting")
            }
        }
        if dropped, case .success(let token) = result, refresher.token.value == token.value {
            problems.append("refresh \(index)'s result was stored over a token set meanwhile")
        }
        waitingAtFailure[index] = !dropped && failed ? waiting : nil
    }

    /// Requests waiting for a refresh right now (the world is settled): started, neither finished nor held.
    private func waitingRequests() -> Set<Int> {
        let held = unansweredRequests()
        return Set(tasks.keys.filter { !finished.contains($0) && !held.contains($0) })
    }

    private var waitingAtFailure: [Int: Set<Int>] = [:]

    /// Requests started that have sent nothing yet.
    private func unsentRequests() -> Set<Int> {
        var sent: Set<Int> = []
        for case .sent(let request, _) in world.log { sent.insert(request) }
        return Set(tasks.keys.filter { !sent.contains($0) })
    }

    /// Requests held by the server now: sent more often than answered, and not finished.
    private func unansweredRequests() -> Set<Int> {
        var balance: [Int: Int] = [:]
        for event in world.log {
            switch event {
            case .sent(let request, _): balance[request, default: 0] += 1
            case .answered(let request, _, _): balance[request, default: 0] -= 1
            default: break
            }
        }
        return Set(balance.filter { $0.value > 0 && !finished.contains($0.key) }.keys)
    }

    private func revoke() async {
        let current = refresher.token.value
        trace.append("revoke \(current)")
        server.revoke(current)
    }

    private func setToken() async {
        minted += 1
        let lifetime = Self.lifetimeChoices.randomElement(using: &random)!
        let token = TokenRefresher.Token("s\(minted)", expiresIn: lifetime)
        let accepted = Int.random(in: 0..<10, using: &random) < 7
        if accepted { server.issue(token.value, lifetime: lifetime) }
        lifetimes[token.value] = lifetime
        trace.append("setToken \(token.value) \(String(describing: lifetime))" + (accepted ? "" : " (never accepted)"))
        await refresher.setToken(token)
    }

    private func advanceClock() async {
        let by = [Duration.seconds(1), .seconds(5), .seconds(11), .seconds(16), .seconds(31)].randomElement(
            using: &random
        )!
        trace.append("advance clock by \(by)")
        world.clock.advance(by: by)
    }

    private func cancel(_ unfinished: [Int]) async {
        let id = unfinished.randomElement(using: &random)!
        trace.append("cancel request \(id)")
        cancelled.insert(id)
        tasks[id]?.cancel()
    }

    /// Answers and completes everything until every request has finished.
    private func drain() async {
        trace.append("drain")
        while true {
            if let (index, replaced) = refreshes.pending {
                minted += 1
                let token = TokenRefresher.Token("r\(minted)")
                server.issue(token.value, lifetime: nil)
                lifetimes[token.value] = Duration?.none
                trace.append("complete refresh \(index) of \(replaced.value): \(token.value)")
                world.record(.refreshCompleted(index: index, replaced: replaced.value, failed: false, dropped: false))
                refreshes.complete(with: .success(token))
            } else if server.heldCount > 0 {
                trace.append("answer held request #0")
                server.answer(at: 0)
            } else {
                let stuck = tasks.keys.filter { !finished.contains($0) }.sorted()
                if !stuck.isEmpty {
                    problems.append("requests \(stuck) hang: nothing is held and no refresh runs")
                    for id in stuck { tasks[id]?.cancel() }
                    for task in tasks.values { await task.join() }
                }
                return
            }
            await settle()
        }
    }

    /// Waits until nothing can move without the test: every request is held, waiting for a refresh, or finished,
    /// and a refresh runs exactly when the test holds one. Then records the current token's version.
    private func settle() async {
        let started = tasks.count
        let (world, server, refresher, refreshes) = (self.world, self.server, self.refresher, self.refreshes)
        await world.changes.wait {
            // Read in this order so that nothing moving on while they are read is counted twice or looks
            // settled: a request goes from waiting to held, a refresh starts before the test holds it and ends
            // after the test let it go.
            let finishedCount = world.finishedCount
            let held = server.heldCount
            let refresher = refresher.activity  // both at once: a refresh that ends changes both
            let pending = refreshes.pending != nil
            return finishedCount + held + refresher.waiters == started && pending == refresher.isRefreshing
        }
        for case .finished(let request, _, _) in world.log { finished.insert(request) }
        let token = refresher.token.value
        if let known = versions[token] {
            if known != refresher.version {
                problems.append("token \(token) has versions \(known) and \(refresher.version)")
            }
        } else {
            versions[token] = refresher.version
        }
    }

    // MARK: Invariants

    private func checkLog() {
        let log = world.log
        if refreshes.mostRunning > 1 { problems.append("\(refreshes.mostRunning) refreshes ran at once") }
        if refreshes.cancelledRefreshes > 0 { problems.append("a refresh was cancelled") }

        var rejected: Set<String> = []
        var starts: [(index: Int, replaced: String, at: Duration)] = []
        var failures: [String: Int] = [:]
        var failedIndexes: [Int: String] = [:]
        var sends: [Int: [String?]] = [:]
        var answers: [Int: [(token: String?, accepted: Bool)]] = [:]
        var outcomes: [Int: (Result<Int, any Error>, Duration)] = [:]

        var afterDroppedRefresh = false
        /// Tokens read (by a request starting or sending) since their last refresh failed, or never failed.
        var readSinceFailure: Set<String> = []
        for event in log {
            defer {
                switch event {
                case .refreshCompleted(_, _, _, let dropped): afterDroppedRefresh = dropped
                case .started, .sent, .answered: break
                default: afterDroppedRefresh = false
                }
            }
            switch event {
            case .started(_, let current):
                readSinceFailure.insert(current)
            case .sent(let request, let token):
                sends[request, default: []].append(token)
                if let token { readSinceFailure.insert(token) }
            case .answered(let request, let token, let accepted):
                answers[request, default: []].append((token, accepted))
                if !accepted, let token { rejected.insert(token) }
            case .refreshStarted(let index, let replaced, let current, let at):
                if !rejected.contains(replaced.value) { coverage["refresh before sending", default: 0] += 1 }
                if afterDroppedRefresh {
                    coverage["refresh of a token rejected while an older refresh ran", default: 0] += 1
                }
                checkStart(index: index, replaced: replaced, current: current, at: at, rejected: rejected)
                if failures[replaced.value, default: 0] > 0 && !readSinceFailure.contains(replaced.value) {
                    problems.append(
                        "refresh \(index) of \(replaced.value) was started by a request that read it before its "
                            + "last refresh failed: that request should have got the failure"
                    )
                }
                let earlier = starts.count { $0.replaced == replaced.value }
                if earlier > failures[replaced.value, default: 0] {
                    problems.append(
                        "refresh \(index) of \(replaced.value): \(earlier) earlier, of which only "
                            + "\(failures[replaced.value, default: 0]) failed"
                    )
                }
                starts.append((index, replaced.value, at))
                let inWindow = starts.count { at - $0.at < limit.window }
                if inWindow > limit.maximum {
                    problems.append("refresh \(index): \(inWindow) started within the window")
                }
            case .refreshCompleted(let index, let replaced, let failed, let dropped):
                if dropped { coverage["refresh dropped after setToken", default: 0] += 1 }
                if failed {
                    readSinceFailure.remove(replaced)
                    failures[replaced, default: 0] += 1
                    failedIndexes[index] = replaced
                }
            case .finished(let request, let outcome, let at):
                outcomes[request] = (outcome, at)
            }
        }

        for id in tasks.keys.sorted() {
            guard let (outcome, at) = outcomes[id] else {
                problems.append("request \(id) never finished")
                continue
            }
            let sent = sends[id] ?? []
            let answered = answers[id] ?? []
            checkRetry(id, sent: sent, answered: answered)
            checkOutcome(
                id,
                outcome: outcome,
                at: at,
                sent: sent,
                answered: answered,
                starts: starts.map { $0.at },
                failedIndexes: failedIndexes
            )
        }
        for waiting in waitingAtFailure.values where !waiting.isEmpty {
            coverage["failed refresh with waiters", default: 0] += 1
        }
        for (index, waiting) in waitingAtFailure {
            for id in waiting.sorted() {
                let error = outcomes[id].flatMap { outcome, _ in
                    if case .failure(let error as CourierError) = outcome { error } else { nil }
                }
                let sameError =
                    error?.code == .refreshFailed
                    && (error?.underlying == nil || (error?.underlying as? ModelRefreshError)?.index == index)
                if !sameError {
                    problems.append("request \(id) waited for failed refresh \(index) but ended otherwise")
                }
            }
        }
    }

    /// Invariants 2 and 9 for one refresh start.
    private func checkStart(
        index: Int,
        replaced: TokenRefresher.Token,
        current: String,
        at: Duration,
        rejected: Set<String>
    ) {
        if replaced.value != current {
            problems.append("refresh \(index) replaced \(replaced.value) while \(current) was current")
        }
        guard !rejected.contains(replaced.value) else { return }
        let lifetime = lifetimes[replaced.value] ?? nil
        let due: Bool
        switch (lifetime, replaced.expiresIn) {
        case (let lifetime?, _) where lifetime <= .zero:
            due = replaced.value == initialToken
        case (let lifetime?, let left?):
            due = left <= min(leeway, lifetime / 2)
        default:
            due = false
        }
        if !due {
            problems.append(
                "refresh \(index) of \(replaced.value) (lifetime \(String(describing: lifetime)), left "
                    + "\(String(describing: replaced.expiresIn))) started though nobody was rejected with it "
                    + "and it was not due"
            )
        }
    }

    /// Invariant 1 for one request.
    private func checkRetry(_ id: Int, sent: [String?], answered: [(token: String?, accepted: Bool)]) {
        guard sent.count <= 2 else {
            problems.append("request \(id) was sent \(sent.count) times")
            return
        }
        guard sent.count == 2 else { return }
        guard let first = answered.first, !first.accepted else {
            problems.append("request \(id) was sent again without a rejection")
            return
        }
        let old = sent[0].flatMap { versions[$0] } ?? 0
        let new = sent[1].flatMap { versions[$0] } ?? 0
        if new <= old {
            problems.append(
                "request \(id) was rejected with \(sent[0] ?? "nil") (v\(old)) and sent again with "
                    + "\(sent[1] ?? "nil") (v\(new))"
            )
        }
    }

    /// Invariant 6 for one request.
    private func checkOutcome(
        _ id: Int,
        outcome: Result<Int, any Error>,
        at: Duration,
        sent: [String?],
        answered: [(token: String?, accepted: Bool)],
        starts: [Duration],
        failedIndexes: [Int: String]
    ) {
        let stale = answered.last.flatMap { $0.accepted ? nil : $0.token } ?? tokenAtStart[id]
        coverage[Self.situation(of: outcome, held: sent.count > answered.count), default: 0] += 1
        if sent.count == 2 { coverage["retried after a rejection", default: 0] += 1 }
        let explained: Bool
        switch outcome {
        case .success(let status):
            explained = status == 200 && answered.last?.accepted == true && !cancelled.contains(id)
        case .failure(is CancellationError):
            explained = cancelled.contains(id)
        case .failure(let error as CourierError) where error.code == .authenticationRejected:
            explained = answered.count == 2 && answered.allSatisfy { !$0.accepted }
        case .failure(let error as CourierError) where error.code == .refreshFailed:
            if let underlying = error.underlying as? ModelRefreshError {
                explained = failedIndexes[underlying.index] == stale
            } else {
                explained = error.underlying == nil && failedIndexes.values.contains { $0 == stale }
            }
        case .failure(let error as CourierError) where error.code == .tooManyRefreshes:
            explained = starts.count { at - $0 < limit.window } >= limit.maximum
        case .failure:
            explained = false
        }
        if !explained || (cancelled.contains(id) && !(outcome.failureIsCancellation)) {
            let answers = answered.map { "\($0.token ?? "nil"):\($0.accepted ? 200 : 401)" }
            problems.append(
                "request \(id) ended with \(outcome) at \(at) (answers \(answers), stale \(stale ?? "nil")"
                    + (cancelled.contains(id) ? ", cancelled)" : ")")
            )
        }
    }
}

extension ModelCase {
    /// A name for how a request ended, for coverage.
    fileprivate static func situation(of outcome: Result<Int, any Error>, held: Bool) -> String {
        switch outcome {
        case .success(let status): "answered \(status)"
        case .failure(is CancellationError): held ? "cancelled while held" : "cancelled while waiting"
        case .failure(let error as CourierError): "\(error.code)"
        case .failure(let error): "\(type(of: error))"
        }
    }
}

extension Result where Failure == any Error {
    fileprivate var failureIsCancellation: Bool {
        if case .failure(is CancellationError) = self { return true }
        return false
    }
}
