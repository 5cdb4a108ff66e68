import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The rules of RFC 9111 as pure functions of a stored response, a request and the time: whether a response
/// may be stored, how long it stays fresh, how old it is, whether it may answer a request, which conditional
/// headers revalidate it, how a `304` updates it, and which stored responses an unsafe request invalidates.
///
/// Nothing here does I/O or reads a clock: ``HTTPCache`` passes the time in, and the tests call these
/// directly.
///
/// **Heuristic freshness: none.** RFC 9111 §4.2.2 lets a cache guess a lifetime for a response without
/// `max-age` or `Expires` (typically 10 % of the time since `Last-Modified`). This cache does not guess: such a
/// response is stored only when it has a validator (`ETag` or `Last-Modified`), and each reuse is revalidated
/// with the server, which a quota-conscious client still gains from (a `304` carries no body, and some APIs
/// do not count it against the rate limit).
enum HTTPCachePolicy {
    /// The statuses this cache stores: those RFC 9110 §15.1 calls heuristically cacheable, which a cache is
    /// sure to understand. Others pass through unstored.
    static let storableStatuses: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]

    /// Statuses after which a response allowing `stale-if-error` may be served instead (RFC 5861 §4).
    static let errorStatuses: Set<Int> = [500, 502, 503, 504]

    /// Header fields a `304` does not replace in the stored response (RFC 9111 §3.2 and §4.3.4): they describe
    /// the `304` message itself, not the stored representation.
    static let headersKeptOn304: Set<String> = [
        "content-length", "content-encoding", "transfer-encoding", "content-range", "connection", "keep-alive",
    ]

    /// Request headers that ask a question of their own: a request carrying one goes to the server as it is
    /// and its response is not stored (the caller is doing its own revalidation or asking for a part).
    static let bypassingRequestHeaders = [
        "if-none-match", "if-modified-since", "if-match", "if-unmodified-since", "if-range", "range",
    ]

    // MARK: Storing

    /// Whether a response to a `GET` or `HEAD` request may be stored (RFC 9111 §3), and if so the variant it
    /// is stored as.
    ///
    /// A response that sets a cookie (`Set-Cookie`) or has any other header listed in ``CredentialHeaders``
    /// (`X-Auth-Token`, `X-CSRF-Token`, the names registered) is never stored.
    ///
    /// - Parameter hasCredential: Whether the request carried a credential. Then, as RFC 9111 §3.5 asks, the
    ///   response is stored only when it says it may be (`public`, `must-revalidate` or `s-maxage`).
    static func variantToStore(
        request: URLRequest,
        hasCredential: Bool,
        statusCode: Int,
        headers: [String: String]
    ) -> String? {
        guard storableStatuses.contains(statusCode) else { return nil }
        if requestDirectives(request).noStore { return nil }
        let directives = CacheControl(headers.headerValue("cache-control"))
        if directives.noStore { return nil }
        // A cookie is for the caller it was set for: replayed from here, it would give that caller's session to
        // the next one (RFC 9111 allows storing it; a cache shared by a client's callers must not). So is any
        // credential a response hands out in a field (`X-Auth-Token`, `X-CSRF-Token`): every name listed in
        // `CredentialHeaders` (its standard names and those registered). Not the names that only contain a
        // fragment (`Signature`, a session's consistency token): a response's field so named is rarely a
        // credential, and its response could never be cached.
        if headers.keys.contains(where: CredentialHeaders.isListed) { return nil }
        if hasCredential, !directives.isPublic, !directives.mustRevalidate, directives.sharedMaxAge == nil {
            return nil
        }
        // `private` is for one user (RFC 9111 §5.2.2.7). With a credential the partition is that user's; without one
        // the cache cannot tell whose the response is (a server-side client answers many users through one cache,
        // told apart by a field it does not know), so it answers its caller only.
        if directives.isPrivate, !hasCredential { return nil }
        let hasExplicitLifetime = directives.maxAge != nil || headers.headerValue("expires") != nil
        let hasValidator = headers.headerValue("etag") != nil || headers.headerValue("last-modified") != nil
        guard hasExplicitLifetime || hasValidator else { return nil }
        return variant(of: request, vary: headers.headerValue("vary"))
    }

    /// The values of the request headers `vary` names (lowercased name, a colon and the trimmed value, or the
    /// bare name when the request lacks it; one per line, sorted), or `nil` for `Vary: *`, which no later
    /// request can match.
    ///
    /// A credential header (`Vary: Authorization`, see ``CredentialIdentity``) is recorded as present, never
    /// with its value: the key's partition already tells credentials apart, and no credential is stored.
    static func variant(of request: URLRequest, vary: String?) -> String? {
        guard let vary else { return "" }
        var names = Set<String>()
        // By bytes (FieldText): a comma followed by a combining mark still separates, and only spaces and tabs are
        // trimmed, so no name is hidden and no two values the server tells apart become one variant.
        for name in FieldText.split(vary[...], on: UInt8(ascii: ",")) {
            let name = String(FieldText.trimmed(name)).asciiLowercased
            if name == "*" { return nil }
            if !name.isEmpty { names.insert(name) }
        }
        return names.sorted().map { name in
            guard let value = request.value(forHTTPHeaderField: name) else { return name }
            if CredentialIdentity.isCredential(name) { return name + ":(credential)" }
            return name + ":" + FieldText.trimmed(value[...])
        }.joined(separator: "\n")
    }

    /// Whether `stored` was stored for the representation `request` asks for (RFC 9111 §4.1).
    static func matches(_ stored: CachedResponse, _ request: URLRequest) -> Bool {
        // By bytes: two values that differ to the server (two tenants) but are equal as `String`s never match.
        guard let variant = variant(of: request, vary: stored.facts.vary) else { return false }
        return variant.hasSameBytes(as: stored.variant)
    }

    // MARK: Freshness

    /// What `stored`'s own fields say: its `Cache-Control` directives, its `Vary` field, its freshness lifetime
    /// and its age when it arrived. The cache asks ``CachedResponse/facts`` instead, which works this out once
    /// per entry; the rules below read it from there.
    static func facts(of stored: CachedResponse) -> StoredFacts {
        let directives = CacheControl(stored.header("cache-control"))
        let generatedAt = stored.header("date").flatMap { date($0, now: stored.responseDate) }
        return StoredFacts(
            directives: directives,
            vary: stored.header("vary"),
            freshnessLifetime: freshnessLifetime(stored, directives: directives, generatedAt: generatedAt),
            initialAge: initialAge(stored, generatedAt: generatedAt)
        )
    }

    /// How long the response stays fresh after it was generated, in seconds (RFC 9111 §4.2.1): `max-age`,
    /// else `Expires` minus `Date`; zero without either (no heuristic, see above). `s-maxage` is for shared
    /// caches and is ignored. An `Expires` that is not a valid date means "already expired".
    static func freshnessLifetime(_ stored: CachedResponse) -> Double {
        stored.facts.freshnessLifetime
    }

    /// ``freshnessLifetime(_:)`` from the parsed directives and the parsed `Date` field (`generatedAt`).
    private static func freshnessLifetime(
        _ stored: CachedResponse,
        directives: CacheControl,
        generatedAt: Date?
    ) -> Double {
        if let maxAge = directives.maxAge { return Double(maxAge) }
        guard let expires = stored.header("expires") else { return 0 }
        guard let expiresAt = date(expires, now: stored.responseDate) else { return 0 }
        return max(0, expiresAt.timeIntervalSince(generatedAt ?? stored.responseDate))
    }

    /// The response's age at `now`, in seconds (RFC 9111 §4.2.3): its age when it arrived (the larger of what
    /// its `Date` says and its `Age` field plus the time the request took), plus the time it has spent here.
    ///
    /// `Age` is read as §5.1 says: the first member of a list, ignored when it is not a non-negative integer;
    /// above ``NetworkNumber/maximumSeconds`` it is that many seconds, so a huge `Age` makes the response stale,
    /// never fresh for ever, and never traps.
    static func currentAge(_ stored: CachedResponse, now: Date) -> Double {
        stored.facts.initialAge + max(0, now.timeIntervalSince(stored.responseDate))
    }

    /// The age part of ``currentAge(_:now:)`` that does not move: the response's age when it arrived, from its
    /// `Age` field and its parsed `Date` field (`generatedAt`).
    private static func initialAge(_ stored: CachedResponse, generatedAt: Date?) -> Double {
        let ageField = stored.header("age")?.prefix { $0 != "," }
        let age = ageField.flatMap { NetworkNumber.integer($0, maximum: NetworkNumber.maximumSeconds) }
        let ageValue = age.map(Double.init) ?? 0
        let apparentAge = max(0, stored.responseDate.timeIntervalSince(generatedAt ?? stored.responseDate))
        let responseDelay = max(0, stored.responseDate.timeIntervalSince(stored.requestDate))
        return max(apparentAge, max(0, ageValue) + responseDelay)
    }

    /// Whether `stored` may answer `request` at `now` without asking the server (RFC 9111 §4.2): fresh for at least
    /// the request's `min-fresh`, or stale by no more than its `max-stale` when the response does not say
    /// `must-revalidate`; and neither the response (`no-cache`) nor the request (`no-cache`, `Pragma: no-cache`,
    /// `max-age` smaller than its age, or `max-age=0`) asks for revalidation.
    static func isFresh(_ stored: CachedResponse, for request: URLRequest, now: Date) -> Bool {
        isFresh(stored, requested: requestDirectives(request), now: now)
    }

    /// ``isFresh(_:for:now:)`` with the request's directives already read (``requestFields(_:)``).
    static func isFresh(_ stored: CachedResponse, requested: CacheControl, now: Date) -> Bool {
        if requested.noCache || requested.maxAge == 0 { return false }
        let facts = stored.facts
        if facts.directives.noCache { return false }
        let age = facts.initialAge + max(0, now.timeIntervalSince(stored.responseDate))
        if let maxAge = requested.maxAge, age > Double(maxAge) { return false }
        // Seconds of freshness left; zero or less once stale.
        let left = facts.freshnessLifetime - age
        if left > 0 { return requested.minFresh.map { left >= Double($0) } ?? true }
        // Stale: only as stale as the request accepts, and never a response that must be revalidated once stale.
        guard let maxStale = requested.maxStale, !facts.directives.mustRevalidate else { return false }
        return -left <= Double(maxStale)
    }

    /// Whether `stored` may be served after the server failed to answer (an error, or a 500, 502, 503 or 504):
    /// only when it allows it with `stale-if-error` (RFC 5861) and is not stale by more than that, and never
    /// when it says `must-revalidate` or `no-cache`.
    static func mayServeOnError(_ stored: CachedResponse, now: Date) -> Bool {
        let directives = stored.facts.directives
        guard let allowed = directives.staleIfError, !directives.mustRevalidate, !directives.noCache else {
            return false
        }
        return currentAge(stored, now: now) - freshnessLifetime(stored) <= Double(allowed)
    }

    // MARK: Revalidating

    /// The conditional header fields that ask the server whether `stored` is still current (RFC 9111 §4.3.1):
    /// `If-None-Match` with its `ETag`, `If-Modified-Since` with its `Last-Modified`. Empty when it has neither.
    static func conditionalHeaders(for stored: CachedResponse) -> [(name: String, value: String)] {
        var fields: [(String, String)] = []
        if let tag = stored.header("etag") { fields.append(("If-None-Match", tag)) }
        if let modified = stored.header("last-modified") { fields.append(("If-Modified-Since", modified)) }
        return fields
    }

    /// Whether a `304` describes `stored` (RFC 9111 §4.3.4): when it carries an `ETag`, `stored` has the same one
    /// (weak comparison, RFC 9110 §8.8.3.2); when it carries none but a `Last-Modified`, and `stored` has one too,
    /// they name the same time. A `304` for another representation (a node of the origin that already has the next
    /// version, say) says nothing about the stored body: taking its fields would label that body with the other
    /// representation's validator, and every later `304` would keep it.
    static func notModifiedDescribes(_ stored: CachedResponse, _ notModified: [String: String]) -> Bool {
        if let tag = notModified.headerValue("etag") {
            guard let storedTag = stored.header("etag") else { return false }
            return opaqueTag(tag).hasSameBytes(as: opaqueTag(storedTag))
        }
        if let modified = notModified.headerValue("last-modified"), let storedModified = stored.header("last-modified")
        {
            let now = stored.responseDate
            if let left = date(modified, now: now), let right = date(storedModified, now: now) { return left == right }
            return String(FieldText.trimmed(modified[...])).hasSameBytes(
                as: String(FieldText.trimmed(storedModified[...]))
            )
        }
        return true
    }

    /// An entity tag without its weakness indicator (`W/`) and the spaces and tabs around it.
    private static func opaqueTag(_ tag: String) -> String {
        let trimmed = FieldText.trimmed(tag[...])
        return String(trimmed.hasPrefix("W/") ? trimmed.dropFirst(2) : trimmed)
    }

    /// `stored` updated by a `304` (RFC 9111 §4.3.4): the `304`'s header fields replace the stored ones of the
    /// same name, except those that describe the `304` message itself; the dates become the revalidation's.
    static func updated(
        _ stored: CachedResponse,
        with notModified: [String: String],
        requestDate: Date,
        responseDate: Date
    ) -> CachedResponse {
        var updated = stored
        for (name, value) in notModified where !headersKeptOn304.contains(name.lowercased()) {
            setHeader(name, value, in: &updated.headers)
        }
        updated.requestDate = requestDate
        updated.responseDate = responseDate
        return updated
    }

    /// The header fields to serve `stored` with at `now`: the stored ones and an `Age` field (RFC 9111 §5.1).
    static func servedHeaders(_ stored: CachedResponse, now: Date) -> [String: String] {
        servedHeaders(stored, age: servedAge(stored, now: now))
    }

    /// The `Age` to serve `stored` with at `now`: its current age in whole seconds, rounded down.
    static func servedAge(_ stored: CachedResponse, now: Date) -> Int {
        NetworkNumber.int(currentAge(stored, now: now).rounded(.down))
    }

    /// The stored header fields with `Age: age` (``servedAge(_:now:)``).
    static func servedHeaders(_ stored: CachedResponse, age: Int) -> [String: String] {
        var headers = stored.headers
        setHeader("Age", String(age), in: &headers)
        return headers
    }

    // MARK: Invalidating

    /// The resources a response to `method` invalidates (RFC 9111 §4.4): for an unsafe method and a
    /// non-error status, the target URI and the `Location` and `Content-Location` URIs on the same origin.
    static func invalidatedResources(
        method: String,
        url: URL,
        statusCode: Int,
        headers: [String: String],
        respondedFrom final: URL? = nil
    ) -> [String] {
        guard !["GET", "HEAD", "OPTIONS", "TRACE"].contains(method), (200..<400).contains(statusCode) else {
            return []
        }
        var resources = [resource(url)]
        func add(_ target: URL) {
            guard RedirectContext.isSameOrigin(url, target) else { return }
            let targetResource = resource(target)
            // The same origin spelled otherwise (`HTTPS://`, the host's case, an explicit default port): the entries
            // of the request's origin are filed under the request's spelling of it.
            for spelling in [targetResource, respelled(targetResource, asOriginOf: resources[0])]
            where !resources.contains(spelling) {
                resources.append(spelling)
            }
        }
        // A redirect layer inside the cache followed a 3xx (a 303 to the created resource, a 307): the response
        // is the last hop's, and the resource it came from is one the request changed or named.
        let base = final ?? url
        if let final, !isSameResource(url, final) { add(final) }
        for name in ["location", "content-location"] {
            guard let value = headers.headerValue(name), let target = URL(string: value, relativeTo: base)?.absoluteURL
            else { continue }
            add(target)
        }
        return resources
    }

    /// `resource` with its scheme and authority replaced by those of `other` (a resource of the same origin).
    static func respelled(_ resource: String, asOriginOf other: String) -> String {
        guard let end = authorityEnd(in: resource), let otherEnd = authorityEnd(in: other) else { return resource }
        return String(other[..<otherEnd]) + resource[end...]
    }

    /// Where the authority of `absolute` (a URL's text, `scheme://authority…`) ends: at its first `/`, `?` or `#`,
    /// else at its end; `nil` without `://`.
    private static func authorityEnd(in absolute: String) -> String.Index? {
        let bytes = absolute.utf8
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), bytes[colon...].starts(with: "://".utf8) else {
            return nil
        }
        let authority = bytes.index(colon, offsetBy: 3)
        return bytes[authority...].firstIndex {
            $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#")
        } ?? bytes.endIndex
    }

    /// Whether `response` (the URL a response came from) is `request`'s own resource, its origin and the rest of
    /// its text compared as RFC 9110 §4.2.3 allows (an empty path is `/`). Not so after a redirect layer inside the
    /// cache followed a `3xx`: the response is then another resource's.
    static func isSameResource(_ request: URL, _ response: URL) -> Bool {
        guard RedirectContext.isSameOrigin(request, response) else { return false }
        func rest(_ url: URL) -> Substring {
            let text = resource(url)
            guard let end = authorityEnd(in: text) else { return text[...] }
            return text[end...]
        }
        let (left, right) = (rest(request), rest(response))
        if String(left).hasSameBytes(as: String(right)) { return true }
        func pathed(_ rest: Substring) -> String { rest.hasPrefix("/") ? String(rest) : "/" + rest }
        return pathed(left).hasSameBytes(as: pathed(right))
    }

    /// The resource a URL names, as a key: the absolute URL without its fragment and without its user info
    /// (`user:password@`, a credential: it partitions the cache through ``CredentialIdentity`` instead, and is
    /// never kept in a key, where every store would hold it in clear).
    static func resource(_ url: URL) -> String {
        let absolute = url.absoluteString
        let end = absolute.utf8.firstIndex(of: UInt8(ascii: "#")) ?? absolute.endIndex
        guard let (authority, at) = userInfo(in: absolute, before: end) else { return String(absolute[..<end]) }
        return String(absolute[..<authority] + absolute[absolute.utf8.index(after: at)..<end])
    }

    /// Where the authority of `absolute` (a URL's text) starts, after `scheme://`, and the `@` that ends its user
    /// info (RFC 3986 §3.2.1: the host holds none, so the last one), looking no further than `end`; `nil` when it
    /// has no user info. It reads bytes, not characters: it runs on every lookup of the cache.
    static func userInfo(
        in absolute: String,
        before end: String.Index? = nil
    ) -> (authority: String.Index, at: String.Index)? {
        let bytes = absolute.utf8
        let end = end ?? bytes.endIndex
        guard let colon = bytes[..<end].firstIndex(of: UInt8(ascii: ":")), colon > bytes.startIndex,
            bytes[..<colon].allSatisfy(isSchemeByte),
            bytes[colon...].starts(with: "://".utf8)
        else { return nil }
        let authority = bytes.index(colon, offsetBy: 3)
        guard authority <= end else { return nil }
        let authorityEnd =
            bytes[authority..<end].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? end
        guard let at = bytes[authority..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) else { return nil }
        return (authority, at)
    }

    /// A byte a URL scheme may hold: ASCII letters, digits, `+`, `-` and `.` (RFC 3986 §3.1).
    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."):
            return true
        default:
            return false
        }
    }

    // MARK: Helpers

    /// The request's `Cache-Control` directives, with `Pragma: no-cache` read as `no-cache` when it has no
    /// `Cache-Control` (RFC 9111 §5.4).
    static func requestDirectives(_ request: URLRequest) -> CacheControl {
        requestDirectives(
            cacheControl: request.value(forHTTPHeaderField: "Cache-Control"),
            pragma: request.value(forHTTPHeaderField: "Pragma")
        )
    }

    /// ``requestDirectives(_:)`` from the values of the request's `Cache-Control` and `Pragma` fields.
    static func requestDirectives(cacheControl: String?, pragma: String?) -> CacheControl {
        if let cacheControl { return CacheControl(cacheControl) }
        var directives = CacheControl()
        if let pragma, pragma.lowercased().contains("no-cache") {
            directives.noCache = true
        }
        return directives
    }

    /// What the cache reads of a request's header fields before it looks anything up, in one pass over them
    /// (each `value(forHTTPHeaderField:)` is a scan of its own, lowercasing every name, on Linux): whether it
    /// carries one of ``bypassingRequestHeaders``, and its directives (``requestDirectives(_:)``). A name given
    /// in two spellings reads as `value(forHTTPHeaderField:)` reads it: the first in the fields' order.
    static func requestFields(_ request: URLRequest) -> (bypassing: Bool, directives: CacheControl) {
        guard let fields = request.allHTTPHeaderFields, !fields.isEmpty else { return (false, CacheControl()) }
        var cacheControl: String?
        var pragma: String?
        for (name, value) in fields {
            if cacheControl == nil, name.caseInsensitiveEquals("cache-control") {
                cacheControl = value
            } else if pragma == nil, name.caseInsensitiveEquals("pragma") {
                pragma = value
            } else if bypassingRequestHeaders.contains(where: { name.caseInsensitiveEquals($0) }) {
                return (true, CacheControl())
            }
        }
        return (false, requestDirectives(cacheControl: cacheControl, pragma: pragma))
    }

    /// Sets `name` to `value`, under the spelling `headers` already has, and removes every other spelling of it: a
    /// stored response with both `age` and `Age` (a store or a server may hand over either) must be served with
    /// the one value set here, not beside a stale one.
    static func setHeader(_ name: String, _ value: String, in headers: inout [String: String]) {
        let spellings = headers.keys.filter { $0.caseInsensitiveEquals(name) }
        for spelling in spellings.dropFirst() { headers[spelling] = nil }
        headers[spellings.first ?? name] = value
    }

    static func headers(of response: HTTPURLResponse) -> [String: String] {
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name] = value }
        }
        return headers
    }

    /// An HTTP-date (any of the three forms RFC 9110 §5.6.7 accepts), or `nil`.
    static func date(_ value: String, now: Date) -> Date? {
        RetryAfter.httpDate(Array(value.utf8), now: now).map { Date(timeIntervalSince1970: Double($0)) }
    }
}
