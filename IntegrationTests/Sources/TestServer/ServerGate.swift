import Synchronization

/// Lets a load test have the process to itself: no other test server runs while it does.
///
/// Every server that ``TestServers`` starts holds a place in ``shared`` from the moment it starts until it
/// shuts down. ``alone(waitingAtMost:_:)`` waits until no server holds a place, then runs its body; servers
/// started meanwhile by other tests wait until the body has returned, while servers started inside the body
/// (its own) start at once. Any number of servers run side by side otherwise.
///
/// Swift Testing runs the suites of one test process in parallel, and a test whose timeouts are real, such
/// as the fan-out service's under 1,000 callers, then measures the other tests' load as much as its own: on
/// two cores, with every suite starting at once, its upstream calls took up to 22 seconds instead of
/// milliseconds. Run alone, that test sees only its own load.
///
/// The body waits for servers, never for tests: a test between two servers of its own holds no place, so a
/// waiting body cannot be held up by a test that waits for it. Tests with overlapping servers keep their
/// places, and a body waits until the last of them shuts down; so it may run last of all.
public final class ServerGate: Sendable {
    /// The gate every server that ``TestServers`` starts goes through.
    public static let shared = ServerGate()

    /// A place held by one server; ``leave()`` gives it up (once; later calls do nothing).
    public final class Place: Sendable {
        private let release: Mutex<(@Sendable () -> Void)?>

        init(release: (@Sendable () -> Void)?) {
            self.release = Mutex(release)
        }

        /// Gives the place up.
        public func leave() {
            self.release.withLock { release in
                let action = release
                release = nil
                return action
            }?()
        }

        deinit {
            self.leave()
        }
    }

    /// The servers holding a place and the bodies waiting to run alone.
    private struct State {
        /// The names of the servers holding a place, by number.
        var holders: [Int: String] = [:]
        /// Whether a body is running alone.
        var isAlone = false
        /// Servers waiting to start, by number.
        var waitingServers: [Int: (name: String, continuation: CheckedContinuation<Void, any Error>)] = [:]
        /// Bodies waiting to run alone, in the order they came.
        var waitingAlone: [(number: Int, continuation: CheckedContinuation<Void, any Error>)] = []
        private var nextNumber = 0

        /// A number no other server or body has.
        mutating func takeNumber() -> Int {
            defer { self.nextNumber += 1 }
            return self.nextNumber
        }

        /// When no server holds a place and no body runs alone, makes the first waiting body the one that does.
        mutating func startWaitingAlone() -> CheckedContinuation<Void, any Error>? {
            guard self.holders.isEmpty, !self.isAlone, !self.waitingAlone.isEmpty else { return nil }
            self.isAlone = true
            return self.waitingAlone.removeFirst().continuation
        }

        /// Removes waiter `number`, server or body, and returns its continuation if it was still waiting.
        mutating func removeWaiter(_ number: Int) -> CheckedContinuation<Void, any Error>? {
            if let server = self.waitingServers.removeValue(forKey: number) {
                return server.continuation
            }
            guard let index = self.waitingAlone.firstIndex(where: { $0.number == number }) else { return nil }
            return self.waitingAlone.remove(at: index).continuation
        }
    }

    /// The gate whose ``alone(waitingAtMost:_:)`` body the current task runs in, if any.
    @TaskLocal private static var runningAlone: ServerGate?

    private let state = Mutex(State())

    /// Creates a gate of its own (the tests of the gate use one; servers use ``shared``).
    public init() {}

    /// The names of the servers holding a place now.
    public var holders: [String] {
        self.state.withLock { $0.holders.sorted { $0.key < $1.key }.map(\.value) }
    }

    /// How many servers wait to start and how many bodies wait to run alone.
    public var waiting: (servers: Int, bodies: Int) {
        self.state.withLock { ($0.waitingServers.count, $0.waitingAlone.count) }
    }

    /// Takes a place for a server named `name`, after waiting for a body running alone to return.
    ///
    /// Inside this gate's ``alone(waitingAtMost:_:)`` body the place is taken at once and counts for nothing.
    ///
    /// - Parameter name: The server's name, for ``holders``.
    /// - Returns: The place, to leave when the server has shut down.
    /// - Throws: `CancellationError` if the task is cancelled while it waits.
    public func enter(_ name: String) async throws -> Place {
        if Self.runningAlone === self {
            return Place(release: nil)
        }
        let number = self.state.withLock { $0.takeNumber() }
        // Resumed by `endAlone`, which first gives the place.
        try await self.wait(number) { state, continuation in
            guard state.isAlone else {
                state.holders[number] = name
                return false
            }
            state.waitingServers[number] = (name, continuation)
            return true
        }
        return Place { [self] in self.leave(number) }
    }

    /// Runs `body` once no server holds a place; servers that other tasks start meanwhile wait until it returns.
    ///
    /// - Parameters:
    ///   - limit: How long to wait for the servers holding places to shut down.
    ///   - body: What to run alone.
    /// - Returns: What `body` returns.
    /// - Throws: ``TestServerError`` naming the servers still holding places if they did not all shut down
    ///   within `limit`; `CancellationError` if the task is cancelled while it waits; or what `body` throws.
    public func alone<Result>(
        waitingAtMost limit: Duration,
        isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws -> Result
    ) async throws -> Result {
        let number = self.state.withLock { $0.takeNumber() }
        let timer = Task { [self] in
            try await Task.sleep(for: limit)
            self.giveUp(number, after: limit)
        }
        defer { timer.cancel() }
        // Resumed by `leave` or `endAlone`, which first make this body the one running alone.
        try await self.wait(number) { state, continuation in
            guard !state.holders.isEmpty || state.isAlone else {
                state.isAlone = true
                return false
            }
            state.waitingAlone.append((number, continuation))
            return true
        }
        defer { self.endAlone() }
        return try await Self.$runningAlone.withValue(self) { try await body() }
    }

    private func leave(_ number: Int) {
        let resume = self.state.withLock { state in
            state.holders.removeValue(forKey: number)
            return state.startWaitingAlone()
        }
        resume?.resume()
    }

    private func endAlone() {
        let resume = self.state.withLock { state in
            state.isAlone = false
            if let next = state.startWaitingAlone() {
                return [next]
            }
            for (number, waiting) in state.waitingServers {
                state.holders[number] = waiting.name
            }
            defer { state.waitingServers.removeAll() }
            return state.waitingServers.values.map(\.continuation)
        }
        for continuation in resume {
            continuation.resume()
        }
    }

    /// Ends the wait of body `number` with an error if it is still waiting.
    private func giveUp(_ number: Int, after limit: Duration) {
        let (waiting, holders) = self.state.withLock { state in
            let holders = state.holders.sorted { $0.key < $1.key }.map(\.value)
            return (state.removeWaiter(number), holders)
        }
        waiting?.resume(
            throwing: TestServerError(
                "Servers still running after \(limit), so the test could not run alone: \(holders)"
            )
        )
    }

    /// Suspends as waiter `number` if `register` registers it (returns `true`), until it is resumed; cancelling
    /// the task while it is registered removes it and throws `CancellationError`.
    private func wait(
        _ number: Int,
        register: (inout State, CheckedContinuation<Void, any Error>) -> Bool
    ) async throws {
        enum Outcome { case registered, proceed, cancelled }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let outcome = self.state.withLock { state -> Outcome in
                    if Task.isCancelled { return .cancelled }
                    return register(&state, continuation) ? .registered : .proceed
                }
                switch outcome {
                case .registered: break
                case .proceed: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            let waiting = self.state.withLock { $0.removeWaiter(number) }
            waiting?.resume(throwing: CancellationError())
        }
    }
}
