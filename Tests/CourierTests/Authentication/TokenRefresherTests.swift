import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("TokenRefresher and .authenticating(with:)", .timeLimit(.minutes(3)))
struct TokenRefresherTests {
    private struct RefreshError: Error, Equatable {
        let attempt: Int
    }

    /// A server that accepts exactly the tokens in `valid` and answers 401 to anything else.
    private static func server(
        accepting valid: Locked<Set<String>>,
        onRejection: @escaping @Sendable () async -> Void = {}
    ) -> MockTransport {
        MockTransport { request in
            if let header = bearer(request.urlRequest), valid.value.contains(header) { return .ok }
            await onRejection()
            return .status(401, body: #"{"error":"invalid_token"}"#)
        }
    }

    /// Counts the calls of a test's refresh closure.
    private let refreshCalls = Locked(0)
    /// Opened by `heldRefresher`'s refresh when it starts.
    private let refreshStarted = Gate()
    /// Lets `heldRefresher`'s refresh end.
    private let releaseRefresh = Gate()
    /// Counts the requests a test's server rejected.
    private let rejected = Arrivals()

    /// A refresher from `v1` to `v2` whose refresh, counted in `refreshCalls`, opens `refreshStarted` and then
    /// waits for `releaseRefresh`.
    private func heldRefresher() -> TokenRefresher {
        TokenRefresher(token: .init("v1")) { [refreshCalls, refreshStarted, releaseRefresh] _ in
            refreshCalls.withLock { $0 += 1 }
            refreshStarted.open()
            await releaseRefresh.wait()
            return .init("v2")
        }
    }

    /// Cancels `call`, which waits for the refresh `release` holds, and expects `CancellationError` while that
    /// refresh is still held: the call can end only because its wait stopped. (Should it not, the time limit
    /// cancels the test, which releases the refresh so that the test can end and fail.)
    private static func cancelWhileRefreshIsHeld(
        _ call: Task<(Data, HTTPURLResponse), any Error>,
        release: Gate,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        call.cancel()
        _ = await withTaskCancellationHandler {
            await #expect(throws: CancellationError.self, sourceLocation: sourceLocation) { try await call.join() }
        } onCancel: {
            release.open()
        }
    }

    private static func sendAll(_ count: Int, through client: Client) async -> (ok: Int, errors: [any Error]) {
        await withTaskGroup(of: Result<Int, any Error>.self) { group in
            for _ in 0..<count {
                group.addTask {
                    do {
                        return .success(try await client.send(authenticatedRequest()).1.statusCode)
                    } catch {
                        return .failure(error)
                    }
                }
            }
            var ok = 0
            var errors: [any Error] = []
            for await result in group {
                switch result {
                case .success(200): ok += 1
                case .success(let status): errors.append(CourierError(.unacceptableStatus, message: "\(status)"))
                case .failure(let error): errors.append(error)
                }
            }
            return (ok, errors)
        }
    }

    // MARK: Exactly one refresh

    @Test(
        "10,000 concurrent requests with an expired token: one refresh, all succeed, counter back to 0",
        .timeLimit(.minutes(3))
    )
    func tenThousandConcurrentRejections() async throws {
        let total = 10_000
        let valid = Locked<Set<String>>(["Bearer fresh"])
        let replacedTokens = Locked<[String]>([])
        let refresher = TokenRefresher(token: .init("expired")) { replaced in
            refreshCalls.withLock { $0 += 1 }
            replacedTokens.withLock { $0.append(replaced.value) }
            // Hold the refresh until every request has been rejected, so all of them pile up on it.
            await rejected.wait(for: total)
            return .init("fresh")
        }
        let transport = Self.server(accepting: valid) { rejected.arrive() }
        let counter = RequestCounter()
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.counting(counter), .authenticating(with: refresher)]
        )

        let (ok, errors) = await Self.sendAll(total, through: client)

        #expect(errors.count == 0, "first error: \(errors.first.map { String(describing: $0) } ?? "none")")
        #expect(ok == total)
        #expect(refreshCalls.value == 1)
        #expect(refresher.refreshCount == 1)
        #expect(replacedTokens.value == ["expired"])
        let sent = transport.requests.map { bearer($0) }
        let sentWithExpired = sent.count { $0 == "Bearer expired" }
        let sentWithFresh = sent.count { $0 == "Bearer fresh" }
        #expect(sent.count <= 2 * total)
        #expect(sentWithExpired == total)
        #expect(sentWithFresh == total)  // every rejected request retried, with the new token
        #expect(refresher.version == 2)
        let counts = counter.snapshot
        #expect(counts.inFlight == 0)
        #expect(counts.started == total)
        #expect(counts.succeeded == total)
        #expect(counts.failed == 0 && counts.cancelled == 0)
    }

    @Test("1,000 concurrent requests whose token is past its expiry: one refresh before sending, no rejection")
    func concurrentPreemptiveRefresh() async throws {
        let total = 1_000
        let clock = ManualClock()
        let refresher = TokenRefresher(token: .init("old", expiresIn: .seconds(60)), clock: clock) { _ in
            refreshCalls.withLock { $0 += 1 }
            return .init("new", expiresIn: .seconds(3600))
        }
        let transport = Self.server(accepting: Locked(["Bearer new"]))
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: refresher)]
        )
        clock.advance(by: .seconds(61))

        let (ok, errors) = await Self.sendAll(total, through: client)

        #expect(errors.count == 0, "first error: \(errors.first.map { String(describing: $0) } ?? "none")")
        #expect(ok == total)
        #expect(refreshCalls.value == 1)
        #expect(transport.callCount == total)
        let sentWithNew = transport.requests.count { bearer($0) == "Bearer new" }
        #expect(sentWithNew == total)
    }

    @Test(
        "a token given at start or set later that is empty or holds CR, LF or NUL is refreshed before it is sent",
        arguments: ["", "abc\r\nX-Injected: 1", "abc\u{0}"]
    )
    func unusableGivenTokenIsRefreshed(unusable: String) async throws {
        let refreshed = Locked(0)
        let refresher = TokenRefresher(token: .init(unusable)) { _ in
            let count = refreshed.withLock { count in
                count += 1
                return count
            }
            return .init("good-\(count)")
        }
        let transport = Self.server(accepting: Locked(["Bearer good-1", "Bearer good-2"]))
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: refresher)]
        )
        _ = try await client.send(URLRequest(url: exampleBaseURL.appendingPathComponent("a")))
        await refresher.setToken(.init(unusable))
        _ = try await client.send(URLRequest(url: exampleBaseURL.appendingPathComponent("b")))
        #expect(transport.requests.map { bearer($0) } == ["Bearer good-1", "Bearer good-2"])
    }

    @Test("an empty token whose refresh fails is never sent: the call fails with refreshFailed")
    func unusableTokenWithFailingRefreshIsNotSent() async throws {
        let refresher = TokenRefresher(token: .init("")) { _ in throw URLError(.cannotConnectToHost) }
        let transport = MockTransport(.ok)
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: refresher)]
        )
        let error = await #expect(throws: CourierError.self) {
            try await client.send(URLRequest(url: exampleBaseURL.appendingPathComponent("a")))
        }
        #expect(error?.code == .refreshFailed)
        #expect(transport.requests.isEmpty)
    }

    @Test("two refreshes within one keyed call send their token requests with keys of their own")
    func refreshesWithinOneCallHaveTheirOwnKeys() async throws {
        let clock = ManualClock()
        let transport = MockTransport { request in
            if request.urlRequest.url?.path == "/oauth/token" { return .ok }
            // The payment is rejected with the token the preemptive refresh gave, accepted with the next.
            return bearer(request.urlRequest) == "Bearer t3" ? .ok : .status(401)
        }
        let tokens = Client(baseURL: exampleBaseURL, transport: transport, middleware: [.idempotencyKey()])
        let issued = Locked(1)
        let refresher = TokenRefresher(token: .init("t1", expiresIn: .seconds(60)), clock: clock) { _ in
            var request = URLRequest(url: exampleBaseURL.appendingPathComponent("oauth/token"))
            request.httpMethod = "POST"
            _ = try await tokens.send(request)
            let count = issued.withLock { count in
                count += 1
                return count
            }
            return .init("t\(count)", expiresIn: .seconds(3600))
        }
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.idempotencyKey(), .authenticating(with: refresher)]
        )
        clock.advance(by: .seconds(31))
        var payment = URLRequest(url: exampleBaseURL.appendingPathComponent("payments"))
        payment.httpMethod = "POST"
        _ = try await client.send(payment)

        let keys = transport.requests.filter { $0.url?.path == "/oauth/token" }.map {
            $0.value(forHTTPHeaderField: "Idempotency-Key")
        }
        #expect(keys.count == 2)
        #expect(Set(keys).count == 2, "\(keys)")
    }

    // MARK: Versions

    @Test("a request rejected with an older token retries with the current one and does not refresh again")
    func staleTokenRace() async throws {
        let gates = ["a": Gate(), "b": Gate()]
        let arrived = Arrivals()
        let refresher = TokenRefresher(token: .init("v1")) { _ in
            refreshCalls.withLock { $0 += 1 }
            return .init("v2")
        }
        let transport = MockTransport { request in
            if bearer(request.urlRequest) == "Bearer v2" { return .ok }
            arrived.arrive()
            await gates[request.url!.lastPathComponent]!.wait()
            return .status(401)
        }
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: refresher)]
        )

        let first = Task { try await client.send(authenticatedRequest("a")) }
        let second = Task { try await client.send(authenticatedRequest("b")) }
        await arrived.wait(for: 2)  // both were sent with v1

        gates["a"]!.open()  // a is rejected, refreshes to v2, retries
        #expect(try await first.join().1.statusCode == 200)
        #expect(refresher.version == 2)

        gates["b"]!.open()  // b is rejected with v1, which is older than the current v2
        #expect(try await second.join().1.statusCode == 200)

        #expect(refreshCalls.value == 1)
        let sentByB = transport.requests.filter { $0.url?.lastPathComponent == "b" }.map { bearer($0) }
        #expect(sentByB == ["Bearer v1", "Bearer v2"])
        #expect(transport.callCount == 4)
    }

    // MARK: Cancellation

    @Test(
        "a cancelled waiter stops waiting at once; the shared refresh goes on and is stored",
        .timeLimit(.minutes(1))
    )
    func cancelledWaiter() async throws {
        let refresher = heldRefresher()
        let transport = Self.server(accepting: Locked(["Bearer v2"])) { rejected.arrive() }
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: refresher)]
        )

        let cancelled = Task { try await client.send(authenticatedRequest()) }
        let patient = Task { try await client.send(authenticatedRequest()) }
        await rejected.wait(for: 2)
        await refreshStarted.wait()

        await Self.cancelWhileRefreshIsHeld(cancelled, release: releaseRefresh)
        #expect(refresher.version == 1)

        releaseRefresh.open()
        #expect(try await patient.join().1.statusCode == 200)
        #expect(refresher.version == 2)
        #expect(refresher.token.value == "v2")
        #expect(refreshCalls.value == 1)
    }

    @Test("a refresh whose only waiter was cancelled still completes and is stored", .timeLimit(.minutes(1)))
    func refreshOutlivesItsOnlyWaiter() async throws {
        let refresher = heldRefresher()
        let transport = Self.server(accepting: Locked(["Bearer v2"]))
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: refresher)]
        )

        let only = Task { try await client.send(authenticatedRequest()) }
        await refreshStarted.wait()
        await Self.cancelWhileRefreshIsHeld(only, release: releaseRefresh)
        #expect(refresher.version == 1)

        // A later request either joins the refresh in progress or finds its result: never a second refresh.
        let later = Task { try await client.send(authenticatedRequest()) }
        releaseRefresh.open()
        #expect(try await later.join().1.statusCode == 200)
        #expect(refreshCalls.value == 1)
        #expect(refresher.version == 2)
    }

    // MARK: Failure

    @Test("a failed refresh fails every waiter with the same error, and the next wave refreshes again")
    func refreshFailureThenSecondWave() async throws {
        let wave = 50
        let refresher = TokenRefresher(token: .init("v1")) { replaced in
            let attempt = refreshCalls.increment()
            if attempt == 1 {
                await rejected.wait(for: wave)  // every request of the first wave has been rejected
                throw RefreshError(attempt: attempt)
            }
            return .init("v2")
        }
        let transport = Self.server(accepting: Locked(["Bearer v2"])) { rejected.arrive() }
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: refresher)]
        )

        let first = await Self.sendAll(wave, through: client)
        #expect(first.ok == 0)
        #expect(first.errors.count == wave)
        let codes = first.errors.map { ($0 as? CourierError)?.code }
        #expect(codes.allSatisfy { $0 == .refreshFailed })
        let underlying = first.errors.map { ($0 as? CourierError)?.underlying as? RefreshError }
        #expect(underlying.allSatisfy { $0 == RefreshError(attempt: 1) })
        #expect(refreshCalls.value == 1)
        #expect(transport.callCount == wave)  // nobody was replayed after the failed refresh
        #expect(refresher.version == 1)

        let second = await Self.sendAll(wave, through: client)
        #expect(second.errors.count == 0)
        #expect(second.ok == wave)
        #expect(refreshCalls.value == 2)
        #expect(refresher.version == 2)
    }

    @Test(
        "a request sent before a refresh failed gets that failure instead of starting another refresh",
        .timeLimit(.minutes(1))
    )
    func stragglerAfterFailedRefresh() async throws {
        let holdStraggler = Gate()
        let stragglerSent = Gate()
        let refresher = TokenRefresher(token: .init("v1")) { _ in
            let attempt = refreshCalls.increment()
            if attempt == 1 { throw RefreshError(attempt: attempt) }
            return .init("v2")
        }
        let transport = MockTransport { request in
            if bearer(request.urlRequest) == "Bearer v2" { return .ok }
            if request.url?.lastPathComponent == "straggler" {
                stragglerSent.open()
                await holdStraggler.wait()
            }
            return .status(401)
        }
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: refresher)]
        )

        let straggler = Task { try await client.send(authenticatedRequest("straggler")) }
        await stragglerSent.wait()  // sent with v1, its 401 held back
        let first = await #expect(throws: CourierError.self) { try await client.send(authenticatedRequest()) }
        #expect(first?.code == .refreshFailed)

        holdStraggler.open()  // its 401 arrives after the refresh of v1 failed
        let late = await #expect(throws: CourierError.self) { try await straggler.join() }
        #expect(late?.code == .refreshFailed)
        #expect(late?.underlying as? RefreshError == RefreshError(attempt: 1))
        #expect(refreshCalls.value == 1)
        #expect(transport.callCount == 2)

        // A request sent after the failure may refresh again.
        #expect(try await client.send(authenticatedRequest()).1.statusCode == 200)
        #expect(refreshCalls.value == 2)
    }

    @Test(
        "a refresh closure that asks its own refresher for a new token fails instead of deadlocking",
        .timeLimit(.minutes(1))
    )
    func refreshWaitingForItself() async throws {
        let refresher = Locked<TokenRefresher?>(nil)
        refresher.withLock { box in
            box = TokenRefresher(token: .init("v1")) { _ in
                let inner = try #require(refresher.value)
                return try await inner.refresh()
            }
        }
        let outer = try #require(refresher.value)
        let error = await #expect(throws: CourierError.self) { try await outer.refresh() }
        #expect(error?.code == .refreshFailed)
        #expect((error?.underlying as? CourierError)?.code == .refreshFailed)
        #expect(outer.version == 1)
    }

    @Test("a refreshed token that is empty or contains CR or LF is refused")
    func unusableRefreshedToken() async throws {
        let refresher = TokenRefresher(token: .init("v1")) { _ in .init("v2\r\nX-Injected: 1") }
        let transport = Self.server(accepting: Locked([]))
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: refresher)]
        )
        let error = await #expect(throws: CourierError.self) { try await client.send(authenticatedRequest()) }
        #expect(error?.code == .refreshFailed)
        #expect(transport.callCount == 1)
        #expect(refresher.token.value == "v1")
    }

    // MARK: Loop guard

    @Test("a request is refreshed and retried at most once; a rejected refreshed token is a clear error")
    func rejectedTwice() async throws {
        let refresher = TokenRefresher(token: .init("v1")) { _ in
            let call = refreshCalls.increment()
            return .init("v\(call + 1)")
        }
        let transport = Self.server(accepting: Locked([]))
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: refresher)]
        )

        let error = await #expect(throws: CourierError.self) { try await client.send(authenticatedRequest()) }
        #expect(error?.code == .authenticationRejected)
        #expect(error?.statusCode == 401)
        #expect(error?.bodyPreview?.contains("invalid_token") == true)
        #expect(refreshCalls.value == 1)
        #expect(transport.requests.map { bearer($0) } == ["Bearer v1", "Bearer v2"])
        #expect(error.map { String(describing: $0).contains("v2") } == false)
    }

    @Test("more refreshes than the limit within the window fail fast until the window moves on")
    func refreshWindow() async throws {
        let clock = ManualClock()
        let refresher = TokenRefresher(
            token: .init("v1"),
            limit: .init(maximum: 2, per: .seconds(30)),
            clock: clock
        ) { _ in
            let call = refreshCalls.increment()
            return .init("v\(call + 1)")
        }
        let transport = Self.server(accepting: Locked([]))  // rejects every token
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: refresher)]
        )

        func code() async -> CourierError.Code? {
            do {
                _ = try await client.send(authenticatedRequest())
                return nil
            } catch {
                return (error as? CourierError)?.code
            }
        }

        #expect(await code() == .authenticationRejected)
        clock.advance(by: .seconds(10))
        #expect(await code() == .authenticationRejected)
        clock.advance(by: .seconds(10))
        #expect(await code() == .tooManyRefreshes)
        #expect(refreshCalls.value == 2)
        #expect(refresher.refreshCount == 2)

        clock.advance(by: .seconds(10))  // the first refresh (at 0 s) is now 30 s old
        #expect(await code() == .authenticationRejected)
        #expect(refreshCalls.value == 3)
    }

    // MARK: Preemptive refresh

    @Test("a token within the leeway of its expiry is refreshed before sending")
    func preemptiveRefresh() async throws {
        let clock = ManualClock()
        let replaced = Locked<[TokenRefresher.Token]>([])
        let refresher = TokenRefresher(
            token: .init("v1", expiresIn: .seconds(60)),
            leeway: .seconds(10),
            clock: clock
        ) { old in
            replaced.withLock { $0.append(old) }
            return .init("v2", expiresIn: .seconds(60))
        }
        let transport = Self.server(accepting: Locked(["Bearer v1", "Bearer v2"]))
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: refresher)]
        )

        _ = try await client.send(authenticatedRequest())
        clock.advance(by: .seconds(49))
        _ = try await client.send(authenticatedRequest())
        #expect(replaced.value.isEmpty)

        clock.advance(by: .seconds(1))  // 10 s left: within the leeway
        _ = try await client.send(authenticatedRequest())
        #expect(replaced.value.map(\.value) == ["v1"])
        #expect(replaced.value.first?.expiresIn == .seconds(10))
        #expect(transport.requests.map { bearer($0) } == ["Bearer v1", "Bearer v1", "Bearer v2"])
        #expect(refresher.token.expiresIn == .seconds(60))

        clock.advance(by: .seconds(49))
        _ = try await client.send(authenticatedRequest())
        #expect(replaced.value.count == 1)
        #expect(try await refresher.validToken().value == "v2")
    }

    // MARK: Refresh through the same client

    private struct TokenReply: Codable, Sendable {
        let token: String
    }

    @Test(
        "the refresh can send its request through the same client: untouched, not retried, no deadlock",
        .timeLimit(.minutes(1)),
        arguments: [false, true]
    )
    func refreshThroughTheSameClient(preemptive: Bool) async throws {
        let clock = ManualClock()
        let tokenRequests = Locked<[String?]>([])
        let transport = MockTransport { request in
            if request.url?.path == "/oauth/token" {
                tokenRequests.withLock { $0.append(bearer(request.urlRequest)) }
                return .json(TokenReply(token: "v2"))
            }
            return bearer(request.urlRequest) == "Bearer v2" ? .ok : .status(401)
        }
        let counter = RequestCounter()
        let client = Client(baseURL: exampleBaseURL, transport: transport, middleware: [.counting(counter)])
        let refresher = TokenRefresher(
            token: .init("v1", expiresIn: preemptive ? .seconds(5) : nil),
            clock: clock
        ) { _ in
            let reply: TokenReply = try await client.send(.post("/oauth/token", body: .form(["grant_type": "x"])))
            return .init(reply.token)
        }
        await client.update { $0.middleware.append(.authenticating(with: refresher)) }
        clock.advance(by: .seconds(3))  // past half of its 5 s life: due for a refresh before sending

        let _: EmptyResponse = try await client.send(.get("/data"))

        #expect(tokenRequests.value == [nil])  // sent once, without a credential
        #expect(refresher.refreshCount == 1)
        #expect(refresher.token.value == "v2")
        let data = transport.requests.filter { $0.url?.path == "/data" }.map { bearer($0) }
        #expect(data == (preemptive ? ["Bearer v2"] : ["Bearer v1", "Bearer v2"]))
        #expect(counter.snapshot.started == 2)  // the token request is a request, counted like any other
        #expect(counter.snapshot.succeeded == 2)
    }

    @Test("a token request rejected with 401 fails the refresh instead of refreshing again", .timeLimit(.minutes(1)))
    func tokenEndpointRejects() async throws {
        let transport = MockTransport { request in
            request.url?.path == "/oauth/token" ? .status(401, body: "bad refresh token") : .status(401)
        }
        let client = Client(baseURL: exampleBaseURL, transport: transport)
        let refresher = TokenRefresher(token: .init("v1")) { _ in
            let reply: TokenReply = try await client.send(.post("/oauth/token"))
            return .init(reply.token)
        }
        await client.update { $0.middleware.append(.authenticating(with: refresher)) }

        let error = await #expect(throws: CourierError.self) { try await client.send(authenticatedRequest()) }
        #expect(error?.code == .refreshFailed)
        #expect((error?.underlying as? CourierError)?.statusCode == 401)
        #expect(transport.requests.filter { $0.url?.path == "/oauth/token" }.count == 1)
        #expect(refresher.refreshCount == 1)
    }

    // MARK: In the recommended stack

    @Test("in the recommended stack: validation inside, retry outside, one refresh, nothing resent by retry")
    func recommendedStack() async throws {
        let clock = ManualClock()
        let refresher = TokenRefresher(token: .init("expired")) { _ in
            refreshCalls.withLock { $0 += 1 }
            return .init("fresh")
        }
        let transport = Self.server(accepting: Locked(["Bearer fresh"]))
        let counter = RequestCounter()
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [
                .counting(counter),
                .timeout(.seconds(30), clock: clock),
                .retry(.default, clock: clock),
                .authenticating(with: refresher),
                .timeout(.seconds(10), clock: clock),
                .validatingStatus(),
            ]
        )
        let (ok, errors) = await Self.sendAll(100, through: client)
        #expect(errors.count == 0, "first error: \(errors.first.map { String(describing: $0) } ?? "none")")
        #expect(ok == 100)
        #expect(refreshCalls.value == 1)
        #expect(transport.callCount <= 200)
        #expect(transport.requests.count { bearer($0) == "Bearer fresh" } == 100)
        #expect(counter.snapshot.started == 100 && counter.snapshot.succeeded == 100 && counter.snapshot.inFlight == 0)

        // A token the server keeps rejecting is not resent by the retry layer: one refresh, one retry, done.
        let rejecting = TokenRefresher(token: .init("a")) { _ in .init("b") }
        let strict = Self.server(accepting: Locked([]))
        let strictClient = Client(
            baseURL: exampleBaseURL,
            transport: strict,
            middleware: [.retry(.default, clock: clock), .authenticating(with: rejecting), .validatingStatus()]
        )
        let error = await #expect(throws: CourierError.self) { try await strictClient.send(authenticatedRequest()) }
        #expect(error?.code == .authenticationRejected)
        #expect(strict.callCount == 2)
    }

    @Test(
        "a whole-call timeout ends a request waiting for a refresh; the refresh goes on for the others",
        .timeLimit(.minutes(1))
    )
    func timeoutWhileWaitingForRefresh() async throws {
        let clock = ManualClock()
        let refresher = heldRefresher()
        let transport = Self.server(accepting: Locked(["Bearer v2"]))
        let counter = RequestCounter()
        let hurried = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [
                .counting(counter), .timeout(.seconds(5), clock: clock), .authenticating(with: refresher),
                .validatingStatus(),
            ]
        )
        let patient = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: refresher)]
        )

        let waiting = Task { try await hurried.send(authenticatedRequest()) }
        await refreshStarted.wait()
        await clock.waitForSleepers(count: 1)  // the timeout's timer
        let other = Task { try await patient.send(authenticatedRequest()) }
        clock.advance(by: .seconds(5))
        let error = await #expect(throws: CourierError.self) {
            _ = try await withTaskCancellationHandler {
                try await waiting.join()
            } onCancel: {
                releaseRefresh.open()
            }
        }
        #expect(error?.code == .timedOut)
        #expect(counter.snapshot.failed == 1 && counter.snapshot.inFlight == 0)

        releaseRefresh.open()
        #expect(try await other.join().1.statusCode == 200)
        #expect(refresher.refreshCount == 1)
        #expect(refresher.version == 2)
    }

    // MARK: Configuration

    @Test("the header name and scheme are configurable; Authorization: Bearer by default")
    func headerAndScheme() async throws {
        let transport = MockTransport.ok
        let refresher = TokenRefresher(token: .init("secret")) { _ in .init("other") }
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [
                .authenticating(with: refresher),
                .authenticating(with: refresher, scheme: .header("X-API-Key")),
                .authenticating(with: refresher, scheme: AuthorizationScheme(header: "X-Token", scheme: "Token")),
            ]
        )
        _ = try await client.send(authenticatedRequest())
        let sent = try #require(transport.requests.first)
        #expect(sent.value(forHTTPHeaderField: "Authorization") == "Bearer secret")
        #expect(sent.value(forHTTPHeaderField: "X-API-Key") == "secret")
        #expect(sent.value(forHTTPHeaderField: "X-Token") == "Token secret")
    }

    @Test("an invalid header name fails every request before anything is sent")
    func invalidScheme() async throws {
        let transport = MockTransport.ok
        let refresher = TokenRefresher(token: .init("secret")) { _ in .init("other") }
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: refresher, scheme: .header("X Bad\r\n"))]
        )
        let error = await #expect(throws: CourierError.self) { try await client.send(authenticatedRequest()) }
        #expect(error?.code == .invalidRequest)
        #expect(transport.callCount == 0)
        #expect(error.map { String(describing: $0).contains("secret") } == false)
    }

    private struct APIError: Codable {
        let code: Int
    }

    @Test(
        "a custom failure rule: 403 with body code 999 refreshes, another 403 is passed on",
        arguments: [(999, 2, 200), (1, 1, 403)]
    )
    func customFailure(bodyCode: Int, expectedCalls: Int, expectedStatus: Int) async throws {
        let refresher = TokenRefresher(token: .init("v1")) { _ in .init("v2") }
        let transport = MockTransport { request in
            bearer(request.urlRequest) == "Bearer v2" ? .ok : .json(APIError(code: bodyCode), status: 403)
        }
        let rule = AuthenticationFailure.unauthorized.or(
            AuthenticationFailure { response in
                response.statusCode == 403
                    && (try? JSONDecoder().decode(APIError.self, from: response.body))?.code == 999
            }
        )
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: refresher, failure: rule)]
        )
        let (_, response) = try await client.send(authenticatedRequest())
        #expect(response.statusCode == expectedStatus)
        #expect(transport.callCount == expectedCalls)
        #expect(refresher.refreshCount == expectedCalls - 1)
    }

    @Test("a rejection thrown by status validation inside the middleware is recognised too")
    func thrownRejection() async throws {
        let refresher = TokenRefresher(token: .init("v1")) { _ in .init("v2") }
        let transport = Self.server(accepting: Locked(["Bearer v2"]))
        let throwing401 = Middleware(name: "validate") { request, next in
            let (data, response) = try await next(request)
            guard response.statusCode < 400 else {
                throw CourierError(
                    .unacceptableStatus,
                    message: "bad",
                    request: request,
                    response: response,
                    body: data
                )
            }
            return (data, response)
        }
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: refresher), throwing401]
        )
        #expect(try await client.send(authenticatedRequest()).1.statusCode == 200)
        #expect(refresher.refreshCount == 1)
        #expect(transport.requests.map { bearer($0) } == ["Bearer v1", "Bearer v2"])
    }

    @Test("a 401 from another origin (after a redirect) is not the token's fault and is passed on")
    func foreignOriginRejection() async throws {
        let refresher = TokenRefresher(token: .init("v1")) { _ in .init("v2") }
        let foreign = MockTransport { _ in .status(401) }
        // Stands in for a redirect middleware: the answer comes from another host.
        let redirected = Middleware { request, next in
            var hop = URLRequest(url: URL(string: "https://elsewhere.example.test/login")!)
            hop.httpMethod = request.httpMethod
            return try await next(hop)
        }
        let client = Client(
            baseURL: exampleBaseURL,
            transport: foreign,
            middleware: [.authenticating(with: refresher), redirected]
        )
        #expect(try await client.send(authenticatedRequest()).1.statusCode == 401)
        #expect(refresher.refreshCount == 0)
        #expect(foreign.callCount == 1)
    }

    @Test(
        "with real redirects, in either order: the token reaches only the first origin, a foreign 401 is passed on",
        arguments: [true, false]
    )
    func redirects(redirectsInside: Bool) async throws {
        let refresher = TokenRefresher(token: .init("t0k3n")) { _ in .init("other") }
        let transport = MockTransport { request in
            switch (request.url?.host, request.url?.path) {
            case ("api.example.test", "/start"): .status(307, headers: ["Location": "/moved"])
            case ("api.example.test", "/moved"): .status(302, headers: ["Location": "https://evil.example.test/x"])
            default: .status(401)
            }
        }
        let auth = Middleware.authenticating(with: refresher)
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: redirectsInside ? [auth, .followingRedirects()] : [.followingRedirects(), auth]
        )
        let (_, response) = try await client.send(URLRequest(url: URL(string: "https://api.example.test/start")!))

        #expect(response.statusCode == 401)
        #expect(response.url?.host == "evil.example.test")
        #expect(transport.requests.map { bearer($0) } == ["Bearer t0k3n", "Bearer t0k3n", nil])
        #expect(refresher.refreshCount == 0)
    }

    @Test("setToken stores the next version, and wins over a refresh in progress", .timeLimit(.minutes(1)))
    func setTokenDuringRefresh() async throws {
        let refresher = TokenRefresher(token: .init("v1")) { _ in
            refreshStarted.open()
            await releaseRefresh.wait()
            return .init("from-refresh")
        }
        let refreshing = Task { try await refresher.refresh() }
        await refreshStarted.wait()
        await refresher.setToken(.init("signed-in"))
        #expect(refresher.version == 2)
        releaseRefresh.open()
        #expect(try await refreshing.join().value == "signed-in")
        #expect(refresher.token.value == "signed-in")
        #expect(refresher.version == 2)
    }

    @Test("descriptions never contain the token")
    func redaction() {
        let token = TokenRefresher.Token("s3cr3t-value", expiresIn: .seconds(5))
        #expect(!String(describing: token).contains("s3cr3t"))
        #expect(!String(reflecting: token).contains("s3cr3t"))
        #expect(String(describing: token).contains(Redaction.placeholder))
    }
}
