import Courier

/// A value guarded by a mutex, shareable between tasks and closures, for recording things in tests.
///
/// ```swift
/// let seen = Locked<[String]>([])
/// let transport = MockTransport { request in
///     seen.withLock { $0.append(request.url!.path) }
///     return .ok
/// }
/// ```
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: LockedState<Value>

    /// Creates a box holding `value`.
    public init(_ value: Value) {
        mutex = LockedState(value)
    }

    /// The current value.
    public var value: Value {
        mutex.withLock { $0 }
    }

    /// Runs `body` with exclusive access to the value.
    ///
    /// - Parameter body: Reads or changes the value.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    public func withLock<Result: Sendable>(_ body: (inout sending Value) throws -> sending Result) rethrows -> Result {
        try mutex.withLock { try body(&$0) }
    }
}
