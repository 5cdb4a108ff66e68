public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// A client's middleware and transport, composed once per configuration change.
///
/// Sending walks the array by index (`Next` carries the position), so a request costs no closure
/// allocation and no actor hop; a pass-through layer is one indexed closure call.
///
/// What one layer costs is mostly the Swift concurrency runtime: each `async` call allocates a frame
/// from the task's allocator, and each resumption of a function that does not inherit its caller's
/// isolation may switch executors. So the hot path is written to make as few of both as possible (see
/// Benchmarks/RESULTS.md for the measurements behind each choice):
/// - The walk is ``Next/callAsFunction(_:)``, inlined, always, into the calling middleware's closure
///   (and into `Client.send`): each layer's closure calls the next layer's closure itself, and the last
///   one calls the transport itself, with no frame of the chain's own in between.
/// - It runs `nonisolated(nonsending)`, like ``Middleware/Handler``: on the caller's executor, with no
///   executor switch on entry.
/// - The chain keeps the ``Middleware`` values, not an array of their closures: an array stores a
///   closure in its most general form, and calling it back out goes through two reabstraction thunks,
///   each one more frame.
@usableFromInline
final class Chain: Sendable {
    @usableFromInline
    let middleware: [Middleware]
    @usableFromInline
    let transport: any Transport

    /// The origin of the client's base URL, worked out once per configuration: where a credential goes by
    /// default (see ``CredentialOrigins``). `nil` for a client without a base URL.
    let baseOrigin: HTTPOrigin?

    /// The transport, when it enforces deadlines itself.
    let deadlineEnforcer: (any DeadlineEnforcingTransport)?

    /// For each position, whether every layer from there down waits only within ``Deadline/current`` and
    /// the transport enforces deadlines: a timeout at that position may then run the rest of the chain in
    /// its own task, without a child task to cancel (see `TimeoutRunner`).
    private let deadlineReachesTransport: [Bool]

    init(middleware: [Middleware], transport: any Transport, baseURL: URL? = nil) {
        self.middleware = middleware
        self.transport = transport
        self.baseOrigin = baseURL.flatMap(HTTPOrigin.init)
        let enforcer = transport as? any DeadlineEnforcingTransport
        self.deadlineEnforcer = enforcer
        var reaches = [Bool](repeating: false, count: middleware.count + 1)
        reaches[middleware.count] = enforcer != nil
        for index in middleware.indices.reversed() {
            reaches[index] = reaches[index + 1] && middleware[index].waitsOnlyWithinDeadline
        }
        self.deadlineReachesTransport = reaches
    }

    /// Whether the transport enforces `deadline` for the layers from `index` down: every one of them waits
    /// only within the deadline, and the transport enforces deadlines on the deadline's clock.
    func transportEnforces(_ deadline: Deadline, from index: Int) -> Bool {
        guard deadlineReachesTransport[index], let deadlineEnforcer else { return false }
        return deadlineEnforcer.enforces(deadline)
    }

    /// Sends `request` through the layers from `index` on, then the transport.
    @inlinable @inline(__always)
    nonisolated(nonsending) func send(
        _ request: URLRequest,
        from index: Int
    ) async throws -> (Data, HTTPURLResponse) {
        try await Next(chain: self, index: index)(request)
    }

    /// The innermost layer an error crosses is where it came from; outer layers keep that name.
    @usableFromInline
    static func attributing(_ error: any Error, to name: String?) -> any Error {
        guard let error = error as? CourierError else { return error }
        return error.attributed(toMiddleware: name)
    }

    /// What a transport's error becomes: a ``CourierError`` stays one, cancellation is reported as
    /// `CancellationError`, anything else is wrapped as ``CourierError/Code/transport``.
    ///
    /// Errors made here belong to no middleware: they are attributed before they cross any layer, so that
    /// the innermost middleware does not take the blame for a transport error or a refused request.
    @usableFromInline
    static func transportFailure(_ error: any Error, request: URLRequest) -> any Error {
        switch error {
        case let error as CourierError:
            return error.attributed(toMiddleware: nil)
        case is CancellationError:
            return error
        default:
            // URLSession reports a cancelled task as URLError(.cancelled); callers see CancellationError.
            if Task.isCancelled { return CancellationError() }
            return CourierError.transport(error, request: request).attributed(toMiddleware: nil)
        }
    }
}
