import Synchronization

/// The request headers that carry a credential: one list, which redaction, the cache and the redirect
/// middleware share.
///
/// - ``Redaction`` replaces their values in every header dictionary, description and log line it prints, and
///   in free text the rest of a line after `Name:` (`X-API-Key: …`).
/// - ``HTTPCache`` files a response to a request carrying any of them under an opaque hash of their values, so
///   one credential's response never answers a request with another credential or none (and stores it only
///   when the response allows it with `public`, `must-revalidate` or `s-maxage`, as RFC 9111 §3.5 asks).
/// - ``Middleware/followingRedirects(max:sensitiveHeaders:allowsInsecureRedirects:)`` removes them on the
///   first hop to another origin.
///
/// A header is a credential header when its name is one of ``standard``, one you added with
/// ``register(_:)``, or contains one of ``Redaction/sensitiveNameFragments`` (`X-Session-Token`,
/// `X-Goog-Api-Key`). Names are compared ignoring ASCII case.
///
/// Register the header your API reads its key from once, at start-up, if its name is none of those:
///
/// ```swift
/// CredentialHeaders.register("X-Partner-Key")
/// ```
///
/// The list is process-wide, like ``Redaction/registerSecret(_:)``: a header that carries a credential for one
/// client is a credential header wherever it is printed or cached.
public enum CredentialHeaders {
    /// The names Courier knows without being told (lowercased): `Authorization`, `Proxy-Authorization`,
    /// `Cookie`, `Set-Cookie`, `X-API-Key`, `Api-Key`, `X-Auth-Token`, `X-CSRF-Token` and `X-XSRF-Token`.
    public static let standard: Set<String> = [
        "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key",
        "x-auth-token", "x-csrf-token", "x-xsrf-token",
    ]

    /// The names added with ``register(_:)``, lowercased, as bytes for the comparison without allocating.
    private static let registered = LockedState<[[UInt8]]>([])
    /// Whether anything was registered: until then, a lookup takes no lock.
    private static let hasRegistered = Atomic<Bool>(false)

    /// ``standard`` and every name added with ``register(_:)``, lowercased.
    ///
    /// Names that count only because they contain a fragment of ``Redaction/sensitiveNameFragments`` are not
    /// listed: ask ``contains(_:)`` about a name.
    public static var names: Set<String> {
        standard.union(registered.withLock { $0 }.map { String(decoding: $0, as: UTF8.self) })
    }

    /// Adds `name` to the credential headers, from now on and for the whole process.
    ///
    /// Registering a name again changes nothing. A redirect middleware, a cache or a redaction made before the
    /// call sees the name too: they ask ``contains(_:)`` each time. ``Middleware/headers(_:origins:)`` decides which
    /// of its fields are credentials when it is made: register names first.
    ///
    /// - Parameter name: A header name, in any case; an empty name is ignored.
    public static func register(_ name: String) {
        let bytes = Array(name.lowercased().utf8)
        guard !bytes.isEmpty else { return }
        registered.withLock { names in
            if !names.contains(bytes) { names.append(bytes) }
        }
        hasRegistered.store(true, ordering: .releasing)
    }

    /// Whether values of the header `name` are credentials: one of ``names``, or a name containing a fragment
    /// of ``Redaction/sensitiveNameFragments``.
    ///
    /// It reads the name's bytes once and allocates nothing.
    ///
    /// - Parameter name: A header name, in any case.
    public static func contains(_ name: String) -> Bool {
        var name = name
        return name.withUTF8 { isListed($0) || RedactionNames.containsFragment($0) }
    }

    /// Whether `name` is one of ``names`` (not counting fragments), ignoring ASCII case.
    static func isListed(_ name: String) -> Bool {
        var name = name
        return name.withUTF8 { isListed($0) }
    }

    /// Whether `name` is one of ``names`` (not counting fragments), ignoring ASCII case.
    static func isListed(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        if RedactionNames.isHeaderName(name) { return true }
        guard hasRegistered.load(ordering: .acquiring) else { return false }
        return registered.withLock { names in names.contains { RedactionNames.equalsIgnoringCase(name, $0) } }
    }
}
