public import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A private HTTP cache (RFC 9111) for `GET` and `HEAD` requests; the state behind ``Middleware/caching(_:)``.
///
/// - **Fresh responses answer without a request**: freshness comes from `Cache-Control: max-age`, else
///   `Expires` against `Date`, minus the response's age (`Age`, `Date`, and the time it has been stored).
///   `s-maxage` is for shared caches and is not used for freshness. There is no heuristic freshness: a
///   response with neither `max-age` nor `Expires` is stored only if it has a validator, and revalidated
///   each time it is used.
/// - **Stale responses are revalidated** (unless the request's `max-stale` accepts one that does not say
///   `must-revalidate`; a request's `min-fresh` treats a response that expires sooner as stale): the request goes out
///   with `If-None-Match` (the stored `ETag`) and `If-Modified-Since` (the stored `Last-Modified`); a `304` updates the
///   stored header fields and the stored response answers, with its own status (a `200`), to the layers outside. A
///   `304` thrown as a ``CourierError`` by a status validation layer inside counts too. When the updated response may
///   no longer be stored (the `304` says `no-store`, or sets a cookie or another credential field), it answers this request only and every stored
///   response of the resource is removed. A `304` whose `ETag` (or, without one, `Last-Modified`) is not the stored
///   response's is for another representation (RFC 9111 §4.3.4): it updates nothing, and the request is sent again
///   without conditions.
/// - **What is not stored**: responses with `no-store` (in the request or the response), responses that set
///   a cookie (`Set-Cookie`: the cookie is for the caller it was set for, never replayed to another) or hand out
///   another credential in a field listed in ``CredentialHeaders`` (`X-Auth-Token`), `Vary: *`,
///   statuses other than 200, 203, 204, 300, 301, 308, 404, 405, 410, 414 and 501, and, for a request carrying a
///   credential, any response that does not allow it with `public`, `must-revalidate` or `s-maxage`
///   (RFC 9111 §3.5). A `private` response is stored only in a credential's partition (a request with a
///   credential, the response allowing it as above): without a credential the cache cannot tell which of a
///   client's users it is for. `no-cache` responses are stored and revalidated before each use. Requests with a body, a `Range` or a conditional header of their own
///   pass through untouched (or, with `only-if-cached`, are answered `504`). A response a redirect layer inside fetched from another URL (the target of a `302`)
///   answers its request unstored: its lifetime is that URL's, not the redirecting one's.
/// - **Credentials are never mixed**: a request's credential headers (``CredentialHeaders``: `Authorization`,
///   `Cookie`, `X-API-Key`, …, and the names you register; see ``HTTPCacheKey/partition``) are part of the key,
///   as an opaque keyed hash, so a response stored for one credential never answers a request
///   with another, or without one. List the cache **inside** (after) `.authenticating`, so that it sees the
///   credential; if an authenticating layer inside the cache attaches one, the request fails with
///   ``CourierError/Code/invalidRequest`` and nothing is stored or shared.
/// - **Vary**: the request header fields a response's `Vary` names must match for it to be reused; each
///   combination is stored separately.
/// - **Unsafe requests invalidate**: a `POST`, `PUT`, `DELETE`, `PATCH` (any method but `GET`, `HEAD`,
///   `OPTIONS`, `TRACE`) that gets a 2xx or 3xx response removes every stored response of its URL, and of
///   its `Location` and `Content-Location` on the same origin (however the origin is spelled), and of the URL a
///   redirect layer inside followed to on that origin (a `303`'s target), for every credential. A response that was
///   on its way when an unsafe request through this cache invalidated its resource is not stored, nor a `304`'s
///   update kept: it may describe the resource before the change (through another cache sharing the store, when
///   the store says so: `PostgresHTTPCacheStore`, with the `Postgres` trait, does for every replica).
/// - **stale-if-error**: when the server fails (an error, or 500, 502, 503 or 504), a stored response is
///   served instead only if it said so with `stale-if-error=<seconds>` and is not stale by more than that,
///   and never if it says `must-revalidate` or `no-cache`.
/// - **Concurrent misses** for the same request go to the server once (the ``RequestCoalescer`` machinery);
///   every caller gets the result (unless the response Varies on a tracing field the callers' requests may differ
///   in, or on anything, `Vary: *`: then each caller that joined looks up or fetches its own), and a cancelled
///   caller stops waiting without cancelling the others. A caller that comes after an unsafe request through
///   this cache changed the resource never joins a fetch that began before the change. Across the processes that share a store, a store that
///   coordinates fills (``HTTPCacheStore/beginFill(for:holder:)``) lets one of them fetch while the others wait
///   for what it stores, each no longer than its lease, and never past a caller's deadline.
///
/// Each lookup or store is one call to the ``HTTPCacheStore``; a fresh hit costs that lookup, and sends nothing.
/// What a stored response's fields say, and the `HTTPURLResponse` served from it, are worked out once per entry
/// (the response once per URL and whole second of `Age`) and kept beside it, not on every hit (see
/// ``CachedResponse``): a store that decodes its entries anew on each lookup pays for them on each hit.
public final class HTTPCache: Sendable {
    /// Where the responses are kept.
    public let store: any HTTPCacheStore

    private let now: @Sendable () -> Date
    private let onEvent: (@Sendable (CacheEvent) -> Void)?
    private let credentials: CredentialIdentity
    private let coalescer = RequestCoalescer()
    /// What unsafe requests invalidated while fetches were in flight (see ``InvalidationLog``).
    private let invalidations = LockedState(InvalidationLog())

    /// Creates a cache.
    ///
    /// - Parameters:
    ///   - store: Where responses are kept; a new ``InMemoryHTTPCacheStore`` by default.
    ///   - clock: Measures how long responses have been stored; tests pass a manual clock.
    ///   - startDate: The wall-clock time when `clock` reads its current instant: the cache's time is this
    ///     plus the clock's elapsed time, so HTTP dates (`Date`, `Expires`) are compared on the same clock.
    ///   - onEvent: Told what the cache does (see ``CacheEvent``), synchronously: keep it short.
    ///   - partitionSecret: A secret the replicas of a fleet share so that they file a response to a request with
    ///     a credential under the same partition, and find each other's (see ``HTTPCache/PartitionSecret``);
    ///     `nil` (the default) draws a key at random, and such responses stay this cache's own.
    public init(
        store: any HTTPCacheStore = InMemoryHTTPCacheStore(),
        clock: some Clock<Duration> = ContinuousClock(),
        startDate: Date = Date(),
        onEvent: (@Sendable (CacheEvent) -> Void)? = nil,
        partitionSecret: PartitionSecret? = nil
    ) {
        self.store = store
        self.credentials = CredentialIdentity(secret: partitionSecret)
        let start = clock.now
        self.now = {
            startDate.addingTimeInterval(start.duration(to: clock.now).timeInterval)
        }
        self.onEvent = onEvent
    }

    /// How many callers wait for a shared request now (for tests).
    var waitingCallers: Int { coalescer.waitingCallers }

    static let misplacedMessage =
        "a middleware inside the caching middleware (.authenticating, .headers with a credential) attached a "
        + "credential the cache cannot see; list .caching after it"

    func send(_ request: URLRequest, next: Next) async throws -> (Data, HTTPURLResponse) {
        guard let url = request.url else { return try await next(request) }
        let method = request.httpMethod?.uppercased() ?? "GET"
        guard method == "GET" || method == "HEAD" else {
            return try await sendUnsafe(request, method: method, url: url, next: next)
        }
        // A streamed call's body goes to its caller as it arrives: it is neither stored nor served from here.
        guard request.httpBody == nil, request.httpBodyStream == nil, StreamCall.current == nil else {
            return try await next(request)
        }
        let fields = HTTPCachePolicy.requestFields(request)
        guard !fields.bypassing, !fields.directives.noStore else {
            // Passed by (a conditional header or a `Range` of its own, `no-store`), yet never sent: `only-if-cached`.
            let directives = fields.bypassing ? HTTPCachePolicy.requestDirectives(request) : fields.directives
            return directives.onlyIfCached ? Self.gatewayTimeout(url) : try await next(request)
        }
        let credential = credentials.identity(of: request)
        let key = HTTPCacheKey(
            resource: HTTPCachePolicy.resource(url),
            partition: credential.map { method + " " + $0 } ?? method
        )
        let lookup = Lookup(
            request: request,
            url: url,
            key: key,
            hasCredential: credential != nil,
            directives: fields.directives
        )
        if let stored = try await self.stored(lookup) {
            let now = now()
            if HTTPCachePolicy.isFresh(stored, requested: lookup.directives, now: now) {
                emit(.hit, lookup)
                return served(stored, lookup, now: now)
            }
        }
        // The caller asked for a stored response or nothing (RFC 9111 §5.2.1.7): nothing fresh is stored.
        if lookup.directives.onlyIfCached {
            emit(.miss, lookup)
            return Self.gatewayTimeout(url)
        }
        // Built only on a miss: a hit does not pay for the coalescing key (every header, sorted).
        guard var coalescingKey = coalescer.key(for: request) else { return try await fetch(lookup, next: next) }
        // A caller that comes after an unsafe request changed the resource does not join a miss that began before
        // (and may bring back the resource as it was, from the network or from a lookup that read the store before
        // the change): the invalidation is part of the key. The miss is on the log from here, so that an
        // invalidation during its first lookup is kept for the callers that come after it.
        let (begun, invalidation) = invalidations.withLock { log in
            (log.begin(), log.lastInvalidation(of: key.resource) ?? 0)
        }
        defer { invalidations.withLock { $0.end(begun) } }
        coalescingKey.invalidation = invalidation
        let shared = try await coalescer.share(coalescingKey) { try await self.fetch(lookup, next: next) }
        // A caller that joined another's fetch sent the same fields except those the coalescer leaves out of its key
        // (tracing ids, `baggage`): a response that Varies on one of them, or on anything (`*`), answers only the
        // request it was sent for (RFC 9111 §4.1). This caller then looks up, or fetches, its own.
        if shared.ranHere || !coalescer.varies(shared.response.1) { return shared.response }
        return try await fetch(lookup, next: next)
    }

    /// One `GET` or `HEAD` request, as the cache files it.
    private struct Lookup: Sendable {
        let request: URLRequest
        let url: URL
        let key: HTTPCacheKey
        let hasCredential: Bool
        /// The request's `Cache-Control` directives (``HTTPCachePolicy/requestDirectives(_:)``), read once.
        let directives: CacheControl

        /// `GET` or `HEAD`, as the partition starts.
        var method: Substring { key.partition.prefix { $0 != " " } }
    }

    /// Sends a request that nothing fresh answered (once for concurrent callers): conditionally when a stored
    /// response can be revalidated; stores, updates or falls back on the stored response with what comes back.
    private func fetch(_ lookup: Lookup, next: Next) async throws -> (Data, HTTPURLResponse) {
        // Looked up again: another caller's shared call may have stored a response since this caller looked.
        var stored = try await self.stored(lookup)
        if let stored {
            let now = now()
            if HTTPCachePolicy.isFresh(stored, requested: lookup.directives, now: now) {
                emit(.hit, lookup)
                return served(stored, lookup, now: now)
            }
        }
        // A request that refuses stored responses has nothing to gain from another process's fetch.
        guard store.coordinatesFills, !lookup.directives.noCache, lookup.directives.maxAge != 0 else {
            return try await fetch(lookup, stored: stored, next: next)
        }
        let holder: String?
        switch try await fillTurn(lookup, stored: stored) {
        case .served(let response):
            return response
        case .fetch(let fill, let latest):
            (holder, stored) = (fill, latest)
        }
        guard let holder else { return try await fetch(lookup, stored: stored, next: next) }
        let result: (Data, HTTPURLResponse)
        do {
            result = try await fetch(lookup, stored: stored, next: next)
        } catch {
            await endFill(lookup, holder: holder)
            throw error
        }
        await endFill(lookup, holder: holder)
        return result
    }

    /// What ``fillTurn(_:stored:)`` decided: a response another process's fetch stored, or to fetch (as the
    /// holder of the fill, or without one) with what is stored now.
    private enum FillTurn {
        case served((Data, HTTPURLResponse))
        case fetch(holder: String?, stored: CachedResponse?)
    }

    /// Asks the store whether this process fetches the lookup's key (``HTTPCacheStore/beginFill(for:holder:)``).
    /// While another process does, waits for it, at most what its lease has left, and looks again: a fresh
    /// response stored meanwhile answers. When the holder ended its fetch without storing one, when the store
    /// fails, or after a second wait (a holder that died lets the next one take over when its lease ends), fetches
    /// without a fill. A fill taken is followed by one more lookup (``heldFill(_:holder:)``).
    private func fillTurn(_ lookup: Lookup, stored: CachedResponse?) async throws -> FillTurn {
        var stored = stored
        let holder = UUID().uuidString
        for _ in 0..<2 {
            let woken: Bool
            do {
                guard let left = try await store.beginFill(for: lookup.key, holder: holder) else {
                    return try await heldFill(lookup, holder: holder)
                }
                let start = now()
                try await store.waitForFill(of: lookup.key, timeout: left)
                woken = now().timeIntervalSince(start) < left.timeInterval
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                emit(.storeFailed, lookup)
                return .fetch(holder: nil, stored: stored)
            }
            stored = try await self.stored(lookup)
            if let stored {
                let now = now()
                if HTTPCachePolicy.isFresh(stored, requested: lookup.directives, now: now) {
                    emit(.hit, lookup)
                    return .served(served(stored, lookup, now: now))
                }
            }
            // The holder ended its fetch and stored nothing fresh for this request (a response that may not be
            // stored, an error): another turn would only queue this fetch behind the next replica's.
            if woken { break }
        }
        return .fetch(holder: nil, stored: stored)
    }

    /// The fill is this process's: looks the key up once more under it, since another process may have stored a
    /// fresh response between this one's lookup and now (its fill then ended, and this one began); that response
    /// answers and the fill ends unused. Otherwise this process fetches.
    private func heldFill(_ lookup: Lookup, holder: String) async throws -> FillTurn {
        let latest: CachedResponse?
        do {
            latest = try await self.stored(lookup)
        } catch {
            await endFill(lookup, holder: holder)  // cancelled: the fill is not left to its lease
            throw error
        }
        if let latest {
            let now = now()
            if HTTPCachePolicy.isFresh(latest, requested: lookup.directives, now: now) {
                await endFill(lookup, holder: holder)
                emit(.hit, lookup)
                return .served(served(latest, lookup, now: now))
            }
        }
        return .fetch(holder: holder, stored: latest)
    }

    /// Ends this process's fill of the lookup's key; a failure is reported, not thrown (the lease then ends on
    /// its own). A cancelled task (every caller of the fetch left) ends it all the same, in shared work of its own
    /// that it does not wait for: left to its lease, the fill would keep every other process waiting that long
    /// for a response nobody is fetching.
    private func endFill(_ lookup: Lookup, holder: String) async {
        if Task.isCancelled {
            let (store, key) = (self.store, lookup.key)
            SharedWork.start { try? await store.endFill(for: key, holder: holder) }
            return
        }
        do {
            try await store.endFill(for: lookup.key, holder: holder)
        } catch is CancellationError {
            return
        } catch {
            emit(.storeFailed, lookup)
        }
    }

    /// Sends the request (conditionally when `stored` can be revalidated) and stores, updates or falls back on
    /// the stored response with what comes back.
    private func fetch(
        _ lookup: Lookup,
        stored: CachedResponse?,
        next: Next
    ) async throws -> (Data, HTTPURLResponse) {
        if stored == nil { emit(.miss, lookup) }
        // An unsafe request that invalidates the resource while this fetch is on its way makes what comes back
        // unfit to store: it may describe the resource before the change.
        let begun = invalidations.withLock { $0.begin() }
        defer { invalidations.withLock { $0.end(begun) } }
        let conditions = stored.map(HTTPCachePolicy.conditionalHeaders) ?? []
        var outgoing = lookup.request
        for condition in conditions { outgoing.setValue(condition.value, forHTTPHeaderField: condition.name) }
        let requestDate = now()
        let witness = CredentialWitness()
        let data: Data
        let response: HTTPURLResponse
        do {
            (data, response) = try await CredentialWitness.$current.withValue(witness) { try await next(outgoing) }
        } catch let error as CourierError where !conditions.isEmpty && error.statusCode == 304 && error.response != nil
        {
            // A status validation layer inside threw the 304 this cache asked for.
            (data, response) = (Data(), error.response!)
        } catch {
            if error is CancellationError { throw error }
            // The error may carry the response to a credential this cache cannot see, and callers that joined this
            // fetch would get it: they get the misplacement instead, as the caller does.
            if witness.sawCredential {
                throw CourierError(.invalidRequest, message: Self.misplacedMessage, request: lookup.request)
            }
            if let stored {
                let now = now()
                if HTTPCachePolicy.mayServeOnError(stored, now: now) {
                    emit(.staleIfError, lookup)
                    return served(stored, lookup, now: now)
                }
            }
            throw error
        }
        if witness.sawCredential {
            throw CourierError(.invalidRequest, message: Self.misplacedMessage, request: lookup.request)
        }
        let responseDate = now()
        let headers = HTTPCachePolicy.headers(of: response)
        // A response a redirect layer inside fetched from another URL (the target of a 302, say) is that URL's, and
        // its lifetime that URL's: it answers this request, unstored.
        let isOwnResource = response.url.map { HTTPCachePolicy.isSameResource(lookup.url, $0) } ?? true
        if response.statusCode == 304, let stored, !conditions.isEmpty,
            !isOwnResource || !HTTPCachePolicy.notModifiedDescribes(stored, headers)
        {
            // The 304 is for another representation or another URL: it says nothing about the stored body. Asked
            // again without conditions, the server sends the representation it has now.
            return try await fetch(lookup, stored: nil, next: next)
        }
        if response.statusCode == 304, let stored, !conditions.isEmpty {
            let updated = HTTPCachePolicy.updated(
                stored,
                with: headers,
                requestDate: requestDate,
                responseDate: responseDate
            )
            emit(.revalidated, lookup)
            // The 304's fields are now the stored response's: one that may no longer be stored (`no-store`, a
            // `Set-Cookie` for this caller) is served to this caller only and removed.
            let mayKeep =
                HTTPCachePolicy.variantToStore(
                    request: lookup.request,
                    hasCredential: lookup.hasCredential,
                    statusCode: updated.statusCode,
                    headers: updated.headers
                ) != nil
            if mayKeep {
                _ = try await save(updated, lookup, begun: begun)
            } else {
                try await remove(lookup)
            }
            return served(updated, lookup, now: now())
        }
        if HTTPCachePolicy.errorStatuses.contains(response.statusCode), let stored,
            HTTPCachePolicy.mayServeOnError(stored, now: responseDate)
        {
            emit(.staleIfError, lookup)
            return served(stored, lookup, now: now())
        }
        if isOwnResource,
            let variant = HTTPCachePolicy.variantToStore(
                request: lookup.request,
                hasCredential: lookup.hasCredential,
                statusCode: response.statusCode,
                headers: headers
            )
        {
            let entry = CachedResponse(
                statusCode: response.statusCode,
                headers: headers,
                body: lookup.method == "HEAD" ? Data() : data,
                requestDate: requestDate,
                responseDate: responseDate,
                variant: variant
            )
            if try await save(entry, lookup, begun: begun) { emit(.stored, lookup) }
        }
        return (data, response)
    }

    /// Sends an unsafe request and, when it succeeded, removes what it invalidates.
    private func sendUnsafe(
        _ request: URLRequest,
        method: String,
        url: URL,
        next: Next
    ) async throws -> (Data, HTTPURLResponse) {
        let (data, response) = try await next(request)
        let resources = HTTPCachePolicy.invalidatedResources(
            method: method,
            url: url,
            statusCode: response.statusCode,
            headers: HTTPCachePolicy.headers(of: response),
            respondedFrom: response.url
        )
        // Noted before the entries go: a fetch that stores after this either sees the note or stored before the
        // removal below.
        invalidations.withLock { log in for resource in resources { log.invalidate(resource) } }
        for resource in resources {
            let target = URL(string: resource) ?? url
            do {
                try await store.removeResponses(forResource: resource)
                emit(CacheEvent(kind: .invalidated, method: method, url: target))
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                emit(CacheEvent(kind: .storeFailed, method: method, url: target))
            }
        }
        return (data, response)
    }

    /// The stored response that matches the request's variant, or `nil` (also when the store throws).
    private func stored(_ lookup: Lookup) async throws -> CachedResponse? {
        do {
            return try await store.responses(for: lookup.key).first { HTTPCachePolicy.matches($0, lookup.request) }
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            emit(.storeFailed, lookup)
            return nil
        }
    }

    /// Stores `entry`, unless an unsafe request invalidated its resource since the fetch that brought it began at
    /// `begun` (checked again after the write, which is then undone: the invalidation may have removed the
    /// resource's entries between the check and the write); `false` when it was not stored or the store threw.
    private func save(_ entry: CachedResponse, _ lookup: Lookup, begun: UInt64) async throws -> Bool {
        let resource = lookup.key.resource
        func invalidated() -> Bool { invalidations.withLock { $0.isInvalidated(resource, since: begun) } }
        if invalidated() { return false }
        do {
            try await store.store(entry, for: lookup.key)
            if invalidated() {
                try await store.removeResponses(forResource: resource)
                return false
            }
            return true
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            emit(.storeFailed, lookup)
            return false
        }
    }

    /// Removes every stored response of the lookup's resource (the store removes by resource only).
    private func remove(_ lookup: Lookup) async throws {
        do {
            try await store.removeResponses(forResource: lookup.key.resource)
            emit(.invalidated, lookup)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            emit(.storeFailed, lookup)
        }
    }

    /// `stored` as the response to the lookup's request at `now`, with its `Age`. The `HTTPURLResponse` is the
    /// one served last from the same entry when the URL and the whole seconds of `Age` are the same
    /// (``CachedResponse/Memo``): building one costs more than the rest of a hit.
    private func served(_ stored: CachedResponse, _ lookup: Lookup, now: Date) -> (Data, HTTPURLResponse) {
        let age = HTTPCachePolicy.servedAge(stored, now: now)
        let response = stored.memo.response(url: lookup.url, age: age) {
            // HTTPURLResponse's initializer fails only without a URL; the request had one.
            HTTPURLResponse(
                url: lookup.url,
                statusCode: stored.statusCode,
                httpVersion: "HTTP/1.1",
                headerFields: HTTPCachePolicy.servedHeaders(stored, age: age)
            )!
        }
        return (lookup.method == "HEAD" ? Data() : stored.body, response)
    }

    /// The answer to an `only-if-cached` request that nothing fresh stored answers: a `504` without a body, sent
    /// nowhere.
    private static func gatewayTimeout(_ url: URL) -> (Data, HTTPURLResponse) {
        // HTTPURLResponse's initializer fails only for a malformed HTTP version.
        (Data(), HTTPURLResponse(url: url, statusCode: 504, httpVersion: "HTTP/1.1", headerFields: [:])!)
    }

    private func emit(_ kind: CacheEvent.Kind, _ lookup: Lookup) {
        onEvent?(CacheEvent(kind: kind, method: String(lookup.method), url: lookup.url))
    }

    private func emit(_ event: CacheEvent) {
        onEvent?(event)
    }
}
