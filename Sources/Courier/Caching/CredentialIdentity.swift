import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Tells requests with different credentials apart without keeping the credentials: a 128-bit keyed hash of
/// the credentials a request carries, with a key drawn at random when the ``HTTPCache`` is made.
///
/// The credentials are the URL's user info (`user:password@`) and the credential headers: those of
/// ``CredentialHeaders`` (`Authorization`, `Cookie`, `X-API-Key`, names containing `token` or `session`, and
/// the names registered), and whichever headers the authenticating layers around the cache attached
/// (``AttachedCredential``, for example an `X-Tenant-Key`).
/// The hash is two runs of the standard library's `Hasher` (SipHash, itself seeded per process) over a
/// random salt and the names and values: no cryptography package, and from the result nothing about
/// the credential can be learnt but whether two requests carried the same one.
///
/// With a configured ``HTTPCache/PartitionSecret`` (a fleet's replicas share one), it is instead HMAC-SHA-256
/// under that secret, cut to 128 bits: the same credential gets the same identity in every process that has the
/// secret, and nobody without it can tell which credential an identity stands for.
struct CredentialIdentity: Sendable {
    private let salts: (UInt64, UInt64)
    private let secret: [UInt8]?

    init(secret: HTTPCache.PartitionSecret? = nil) {
        var generator = SystemRandomNumberGenerator()
        salts = (generator.next(), generator.next())
        self.secret = secret?.key
    }

    /// The identity of the credential `request` carries, as 32 hexadecimal digits, or `nil` when it carries
    /// none.
    func identity(of request: URLRequest) -> String? {
        var credentials: [(name: String, value: String)] = []
        // The URL's user info is a credential too (a transport sends it as `Authorization: Basic`), and the
        // cache's keys leave it out: it is hashed here under a name no header can have.
        // Foundation's `user` and `password` parse the URL again: asked only when its text has user info.
        if let url = request.url, HTTPCachePolicy.userInfo(in: url.absoluteString) != nil,
            url.user != nil || url.password != nil
        {
            credentials.append((" user info", (url.user ?? "") + ":" + (url.password ?? "")))
        }
        if let fields = request.allHTTPHeaderFields, !fields.isEmpty {
            let attached = AttachedCredential.current
            for (name, value) in fields where Self.isCredential(name, attached: attached) {
                credentials.append((name.asciiLowercased, value))
            }
        }
        guard !credentials.isEmpty else { return nil }
        credentials.sort { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        if let secret { return Self.keyedIdentity(of: credentials, secret: secret) }
        var first = Hasher()
        var second = Hasher()
        first.combine(salts.0)
        second.combine(salts.1)
        // By bytes: `String`'s hashing follows canonical equivalence, which would give two credentials that differ
        // in bytes (a token in two Unicode normalizations) one partition.
        for (name, value) in credentials {
            first.combine(utf8Of: name)
            first.combine(utf8Of: value)
            second.combine(utf8Of: name)
            second.combine(utf8Of: value)
        }
        return Self.hex(UInt64(bitPattern: Int64(first.finalize())))
            + Self.hex(UInt64(bitPattern: Int64(second.finalize())))
    }

    /// Whether the header `name` carries a credential: one of ``CredentialHeaders``, or a header an
    /// authenticating layer around the current task attached its credential in.
    static func isCredential(_ name: String, attached: AttachedCredential? = AttachedCredential.current) -> Bool {
        if CredentialHeaders.contains(name) { return true }
        guard let attached else { return false }
        return attached.all.contains { $0.headerName.caseInsensitiveEquals(name) }
    }

    /// HMAC-SHA-256 under `secret` of the names and values, each prefixed with its length (so no two lists
    /// of headers encode alike), as 32 hexadecimal digits.
    static func keyedIdentity(of credentials: [(name: String, value: String)], secret: [UInt8]) -> String {
        var message = Array("courier.cache-partition.v1".utf8)
        for (name, value) in credentials {
            for field in [Array(name.utf8), Array(value.utf8)] {
                let count = UInt32(truncatingIfNeeded: field.count)
                message += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: count >> $0) }
                message += field
            }
        }
        let code = SHA256.authenticationCode(for: message, key: secret)
        return code.prefix(16).map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }.joined()
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

/// Set by a caching or coalescing layer around the call it passes on, so that an authenticating layer listed
/// *inside* it (which attaches a credential the layer never saw) can say so: the layer then refuses to share or
/// store the response. See ``AttachedCredential/attaching(_:)``.
final class CredentialWitness: Sendable {
    @TaskLocal static var current: CredentialWitness?

    /// The witness of a layer further out, told too: a cache outside a coalescing layer learns of the credential
    /// that the coalescing layer's witness saw.
    private let outer: CredentialWitness?

    // One flag, set at most once and read after the inner layers returned: an atomic, no state machine.
    private let attached = Atomic<Bool>(false)

    init(outer: CredentialWitness? = CredentialWitness.current) {
        self.outer = outer
    }

    var sawCredential: Bool { attached.load(ordering: .acquiring) }

    func record() {
        attached.store(true, ordering: .releasing)
        outer?.record()
    }

    /// Runs `operation` with a new witness as ``current`` and returns what it returned, or throws `misplaced`
    /// when a credential was attached inside: a response (or an error, which may carry one) that answers a
    /// credential the outer layer cannot see must not reach callers it would share it with.
    static func guarding<Result: Sendable>(
        misplaced: @autoclosure () -> CourierError,
        _ operation: () async throws -> Result
    ) async throws -> Result {
        let witness = CredentialWitness()
        let result: Result
        do {
            result = try await $current.withValue(witness) { try await operation() }
        } catch {
            if witness.sawCredential && !(error is CancellationError) { throw misplaced() }
            throw error
        }
        if witness.sawCredential { throw misplaced() }
        return result
    }
}
