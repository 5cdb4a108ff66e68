import Synchronization

/// A credential an authenticating layer attached to the request it passes on: which header carries it.
///
/// The layer binds one to ``current`` around its call of `next`, so every layer inside knows, by name,
/// what it must not carry to another origin: the redirect layer removes exactly these headers (besides its
/// fixed list) on a hop that changes the origin, and marks the binding, so that the authenticating layer
/// can tell afterwards that the response it got came from a request without its credential — a `401`
/// there says nothing about the credential. Bindings nest: each points at the one of the layer outside.
///
/// One is made per authenticated request (a small object and a task-local binding, tens of nanoseconds
/// next to the microsecond that setting the header itself costs).
final class AttachedCredential: Sendable {
    /// The header that carries the credential, as the layer spelled it.
    let headerName: String
    /// The credential attached by a layer further out, if any.
    let outer: AttachedCredential?
    /// Set by a redirect layer when it removed the header on a hop to another origin. No state machine: one flag,
    /// written by the redirect layer and read by the authenticating layer after `next` returns.
    private let removed = Atomic<Bool>(false)

    /// The credentials attached by the layers around the current task's request, innermost first.
    @TaskLocal static var current: AttachedCredential?

    init(headerName: String, outer: AttachedCredential?) {
        self.headerName = headerName
        self.outer = outer
    }

    /// Whether a redirect layer inside removed this credential from the last chain of hops it followed, so
    /// that the response it returned came from a request without the credential.
    var wasRemoved: Bool {
        removed.load(ordering: .acquiring)
    }

    /// Records whether a redirect layer's current chain has removed the header (each chain starts with
    /// `false`, so a retry that goes back to the origin is judged on its own chain).
    func setRemoved(_ value: Bool) {
        removed.store(value, ordering: .releasing)
    }

    /// This binding and every one outside it, innermost first.
    var all: some Sequence<AttachedCredential> {
        sequence(first: self) { $0.outer }
    }

    /// Runs `operation` with this binding as ``current``.
    func bound<Result>(_ operation: () async throws -> Result) async rethrows -> Result {
        try await Self.$current.withValue(self) { try await operation() }
    }

    /// A binding for `headerName` on top of the current ones. A caching layer listed outside this one is told
    /// (``CredentialWitness``), as it cannot tell that requests carry a credential.
    static func attaching(_ headerName: String) -> AttachedCredential {
        CredentialWitness.current?.record()
        return AttachedCredential(headerName: headerName, outer: current)
    }
}
