#if Postgres
import CourierTesting
import Foundation
import PostgresNIO
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if canImport(Glibc)
import Glibc
#endif

@Suite(
    "PostgresHTTPCacheStore against a real PostgreSQL",
    .enabled(if: PostgresTestServer.url != nil, PostgresTestServer.skipReason),
    .timeLimit(.minutes(1))
)
struct PostgresHTTPCacheStoreTests {
    private static let url = URL(string: "https://api.example.test/report")!
    private let secret = HTTPCache.PartitionSecret(Array("a secret the replicas share".utf8))

    private func response(
        _ body: String,
        headers: [String: String] = ["Cache-Control": "public, max-age=60"],
        received: Date = Date(),
        variant: String = ""
    ) -> CachedResponse {
        CachedResponse(
            statusCode: 200,
            headers: headers,
            body: Data(body.utf8),
            requestDate: received,
            responseDate: received,
            variant: variant
        )
    }

    private func rowCount(_ client: PostgresClient, _ table: String) async throws -> Int {
        let rows = try await client.query(PostgresQuery(unsafeSQL: "SELECT count(*)::bigint FROM \(table)"))
        for try await count in rows.decode(Int.self) { return count }
        return -1
    }

    @Test("Table names: plain identifiers only; the SQL makes the table and its keep_until index")
    func tableNames() throws {
        let sql = try PostgresHTTPCacheStore.createTableSQL(table: "ops.courier_cache")
        #expect(sql.contains("CREATE TABLE IF NOT EXISTS ops.courier_cache ("))
        #expect(sql.contains("CREATE INDEX IF NOT EXISTS courier_cache_keep_until ON ops.courier_cache (keep_until)"))
        #expect(try PostgresHTTPCacheStore.createTableSQL(table: String(repeating: "c", count: 57)).contains("_fills"))
        for bad in [
            "cache; DROP TABLE users", "Cache", "\"cache\"", "1cache", "a.b.c", "", String(repeating: "c", count: 58),
        ] {
            #expect(throws: CourierError.self, "\(bad)") { try PostgresHTTPCacheStore.createTableSQL(table: bad) }
        }
    }

    @Test("The Fleet article's SQL is what createTable() runs, comments aside")
    func articleSQL() throws {
        let article = try String(
            contentsOf: packageRoot.appendingPathComponent("Sources/Courier/Documentation.docc/Fleet.md"),
            encoding: .utf8
        )
        let blocks = article.components(separatedBy: "```sql\n").dropFirst().map {
            $0.components(separatedBy: "```")[0]
        }
        let block = try #require(blocks.first { $0.contains("courier_http_cache") })
        func normalized(_ sql: String) -> String {
            sql.split(separator: "\n").map { line in line.components(separatedBy: "--")[0] }.joined(separator: " ")
                .split(whereSeparator: \.isWhitespace).joined(separator: " ")
        }
        #expect(normalized(block) == normalized(try PostgresHTTPCacheStore.createTableSQL()))
    }

    @Test("A response round-trips exactly: status, headers, binary body, both dates to the last bit, variant")
    func roundTrip() async throws {
        try await PostgresTestServer.withClient { client, table in
            let store = try PostgresTestServer.cacheStore(client, table: table)
            try await store.createTable()
            let requested = Date(
                timeIntervalSinceReferenceDate: Date().timeIntervalSinceReferenceDate.rounded() + 0.1 + 0.2
            )
            let stored = CachedResponse(
                statusCode: 203,
                headers: ["Cache-Control": "public, max-age=60", "ETag": "\"é-1\"", "X-Empty": "", "x-Lower": "a\tb"],
                body: Data([0, 1, 2, 0xFF, 0xFE, 0, 0x27, 0x5C]),
                requestDate: requested,
                responseDate: Date(timeIntervalSinceReferenceDate: requested.timeIntervalSinceReferenceDate.nextUp),
                variant: "accept:application/json\naccept-language:fr, de;q=0.5\nauthorization:(credential)"
            )
            let key = HTTPCacheKey(resource: Self.url.absoluteString, partition: "GET 0123456789abcdef0123456789abcdef")
            try await store.store(stored, for: key)
            let read = try await store.responses(for: key)
            #expect(read == [stored])
            let first = try #require(read.first)
            #expect(first.body == stored.body)
            #expect(
                first.responseDate.timeIntervalSinceReferenceDate.bitPattern
                    == stored.responseDate.timeIntervalSinceReferenceDate.bitPattern
            )
            #expect(
                first.requestDate.timeIntervalSinceReferenceDate.bitPattern
                    == requested.timeIntervalSinceReferenceDate.bitPattern
            )
            // Nothing for another partition, method or resource.
            #expect(try await store.responses(for: HTTPCacheKey(resource: key.resource, partition: "GET")).isEmpty)
            #expect(
                try await store.responses(for: HTTPCacheKey(resource: key.resource + "?a", partition: key.partition))
                    .isEmpty
            )
        }
    }

    @Test(
        "One row per key and variant: another variant adds one, the same variant replaces; removal takes every partition"
    )
    func variantsAndRemoval() async throws {
        try await PostgresTestServer.withClient { client, table in
            let store = try PostgresTestServer.cacheStore(client, table: table)
            try await store.createTable()
            let resource = Self.url.absoluteString
            let get = HTTPCacheKey(resource: resource, partition: "GET")
            let alice = HTTPCacheKey(resource: resource, partition: "GET aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
            let other = HTTPCacheKey(resource: resource + "/other", partition: "GET")
            try await store.store(response("json", variant: "accept:application/json"), for: get)
            try await store.store(response("xml", variant: "accept:application/xml"), for: get)
            try await store.store(response("json 2", variant: "accept:application/json"), for: get)
            try await store.store(response("alice"), for: alice)
            try await store.store(response("other"), for: other)

            let bodies = try await store.responses(for: get).map { String(decoding: $0.body, as: UTF8.self) }
            #expect(bodies.sorted() == ["json 2", "xml"])
            #expect(try await rowCount(client, table) == 4)

            try await store.removeResponses(forResource: resource)
            #expect(try await store.responses(for: get).isEmpty)
            #expect(try await store.responses(for: alice).isEmpty)
            #expect(try await store.responses(for: other).map(\.body) == [Data("other".utf8)])
            // The other resource's row, and the note of the invalidation (see invalidationNote).
            #expect(try await rowCount(client, table) == 2)
        }
    }

    @Test("A response larger than maximumResponseBytes is not stored; one at the limit is")
    func sizeLimit() async throws {
        try await PostgresTestServer.withClient { client, table in
            let small = response("12345")
            let store = try PostgresTestServer.cacheStore(client, table: table, maximumResponseBytes: small.size)
            try await store.createTable()
            let key = HTTPCacheKey(resource: Self.url.absoluteString, partition: "GET")
            try await store.store(response("123456"), for: key)
            #expect(try await rowCount(client, table) == 0)
            try await store.store(small, for: key)
            #expect(try await store.responses(for: key) == [small])
        }
    }

    @Test("A row is kept while fresh plus the retention (or its stale-if-error period), at most a year")
    func keepUntil() {
        let received = Date(timeIntervalSince1970: 2_000_000_000)
        func keep(_ headers: [String: String], retention: Duration = .seconds(3600)) -> TimeInterval {
            PostgresHTTPCacheStore.keepUntil(response("", headers: headers, received: received), retention: retention)
                .timeIntervalSince(received)
        }
        #expect(keep(["Cache-Control": "max-age=100", "Age": "10"]) == 90 + 3600)
        #expect(keep(["Cache-Control": "max-age=100"], retention: .zero) == 100)
        #expect(keep(["Cache-Control": "no-cache", "ETag": "\"1\""]) == 3600)
        #expect(keep(["Cache-Control": "max-age=60, stale-if-error=86400"]) == 60 + 86400)
        #expect(keep(["Cache-Control": "max-age=999999999999"]) == PostgresHTTPCacheStore.longestKept)
    }

    @Test("Expired rows are invisible, and deleted: by a store once per cleanup interval, at most the limit at a time")
    func expiredRowsAreDeleted() async throws {
        try await PostgresTestServer.withClient { client, table in
            let clock = ManualClock()
            let store = try PostgresHTTPCacheStore(
                client: client,
                table: table,
                cleanupInterval: .seconds(60),
                cleanupLimit: 2,
                clock: clock
            )
            try await store.createTable()
            let twoHoursAgo = Date().addingTimeInterval(-7200)
            let fresh = HTTPCacheKey(resource: "https://api.example.test/fresh", partition: "GET")
            // The first store cleans up (nothing to delete yet); the next ones are within the interval.
            try await store.store(response("fresh"), for: fresh)
            let expired = (0..<4).map { HTTPCacheKey(resource: "https://api.example.test/old/\($0)", partition: "GET") }
            for key in expired { try await store.store(response("old", received: twoHoursAgo), for: key) }
            let kept = HTTPCacheKey(resource: "https://api.example.test/stale-if-error", partition: "GET")
            try await store.store(
                response("kept", headers: ["Cache-Control": "max-age=60, stale-if-error=86400"], received: twoHoursAgo),
                for: kept
            )
            #expect(try await rowCount(client, table) == 6)
            #expect(try await store.responses(for: expired[0]).isEmpty)
            #expect(try await store.responses(for: kept).count == 1)

            // The interval has passed: the next store deletes the two oldest expired rows, no more.
            clock.advance(by: .seconds(60))
            try await store.store(response("fresh again"), for: fresh)
            #expect(try await rowCount(client, table) == 4)
            #expect(try await store.removeExpired(limit: 500) == 2)
            #expect(try await rowCount(client, table) == 2)
            #expect(try await store.responses(for: fresh).map(\.body) == [Data("fresh again".utf8)])
        }
    }

    @Test("A cleanup skips expired rows another session holds and deletes the others without waiting")
    func cleanupSkipsLockedRows() async throws {
        try await PostgresTestServer.withClient { client, table in
            // A cleanup that waited for the lock would wait the store's timeout and throw.
            let store = try PostgresTestServer.cacheStore(client, table: table, cleanupInterval: .seconds(3600))
            try await store.createTable()
            // The first store cleans up: it stores a fresh row, so that the old ones are all there afterwards.
            try await store.store(
                response("fresh"),
                for: HTTPCacheKey(resource: Self.url.absoluteString, partition: "GET")
            )
            let old = Date().addingTimeInterval(-7200)
            for index in 0..<3 {
                let key = HTTPCacheKey(resource: "https://api.example.test/old/\(index)", partition: "GET")
                try await store.store(response("old \(index)", received: old), for: key)
            }
            let deleted = try await PostgresTestServer.whileLocked(
                client,
                "SELECT 1 FROM \(table) ORDER BY keep_until LIMIT 1 FOR UPDATE"
            ) {
                try await store.removeExpired()
            }
            #expect(deleted == 2)
            #expect(try await rowCount(client, table) == 2)
            #expect(try await store.removeExpired() == 1)
        }
    }

    /// An origin whose body names the credential it was sent, cacheable by a shared cache for a minute.
    private func origin() -> MockTransport {
        MockTransport { request in
            .status(
                200,
                body: "for \(request.header("Authorization") ?? "nobody")",
                headers: ["Cache-Control": "public, max-age=60"]
            )
        }
    }

    private func request(_ token: String?) -> URLRequest {
        var request = URLRequest(url: Self.url)
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        return request
    }

    @Test(
        """
        A read on its way at one replica while another replica's PUT changes the resource is not stored: the next \
        read, on either replica, gets the new version from the server
        """
    )
    func invalidationReachesEveryReplica() async throws {
        try await PostgresTestServer.withClient { [secret] client, table in
            try await PostgresHTTPCacheStore(client: client, table: table).createTable()
            // The resource's version goes up with each PUT; a GET answers with the version it read, and the first
            // GET waits at the gate after reading it, as a response on its way does.
            let version = Locked(1)
            let reads = Arrivals()
            let gate = Gate()
            let transport = MockTransport { request in
                if request.httpMethod == "PUT" {
                    version.withLock { $0 += 1 }
                    return .status(204)
                }
                let read = version.value
                reads.arrive()
                if reads.count == 1 { await gate.wait() }
                return .status(200, body: "version \(read)", headers: ["Cache-Control": "public, max-age=60"])
            }
            let replicas = try (0..<2).map { _ in
                let store = try PostgresTestServer.cacheStore(client, table: table)
                return Client(
                    transport: transport,
                    middleware: [.caching(HTTPCache(store: store, partitionSecret: secret))]
                )
            }
            let onItsWay = Task { try await replicas[1].send(request("alice")) }
            await reads.wait(for: 1)
            var put = request("alice")
            put.httpMethod = "PUT"
            _ = try await replicas[0].send(put)
            gate.open()
            let (old, _) = try await onItsWay.join()
            #expect(String(decoding: old, as: UTF8.self) == "version 1")

            for replica in replicas {
                let (body, _) = try await replica.send(request("alice"))
                #expect(String(decoding: body, as: UTF8.self) == "version 2", "served what the PUT changed")
            }
        }
    }

    @Test(
        """
        A store refuses a response whose request began before an invalidation of its resource, or up to a second \
        after on either clock; a later one is stored; lookups never see the note; the note goes with the cleanup
        """
    )
    func invalidationNote() async throws {
        try await PostgresTestServer.withClient { client, table in
            let store = try PostgresTestServer.cacheStore(client, table: table, cleanupInterval: .seconds(3600))
            try await store.createTable()
            let key = HTTPCacheKey(resource: Self.url.absoluteString, partition: "GET")
            let other = HTTPCacheKey(resource: "https://api.example.test/other", partition: "GET")
            try await store.store(response("before"), for: key)
            // The note is made after this instant (one machine: the database's clock is this one).
            let noted = Date()
            try await store.removeResponses(forResource: key.resource)
            #expect(try await store.responses(for: key).isEmpty)

            /// A response to a request sent at `sent` by a clock `ahead` of the database's, answered now.
            func answered(_ body: String, sent: Date, ahead: TimeInterval = 0) -> CachedResponse {
                var stored = response(body, received: sent.addingTimeInterval(ahead))
                stored.responseDate = Date().addingTimeInterval(ahead)
                return stored
            }
            // Sent before the note; within the margin after it; and before it by a replica whose clock is 30 s
            // ahead of the database's (its dates say 30 s after the note; the time its request took does not lie).
            for stale in [
                answered("predates it", sent: noted.addingTimeInterval(-30)),
                answered("within the margin", sent: noted.addingTimeInterval(0.5)),
                answered("clock ahead", sent: noted.addingTimeInterval(-5), ahead: 30),
            ] {
                try await store.store(stale, for: key)
                #expect(
                    try await store.responses(for: key).isEmpty,
                    "stored \(String(decoding: stale.body, as: UTF8.self))"
                )
            }
            // Dates no clock gives (a response decoded from elsewhere) are stored or refused, never a trap.
            for date in [Date(timeIntervalSinceReferenceDate: .nan), Date(timeIntervalSinceReferenceDate: 1e300)] {
                try await store.store(response("odd", received: date), for: key)
                _ = try await store.responses(for: key)
            }
            try await store.removeResponses(forResource: key.resource)
            // Another resource is not affected; a request sent two seconds after the note, on both clocks, is stored.
            try await store.store(response("other", received: noted.addingTimeInterval(-30)), for: other)
            #expect(try await store.responses(for: other).count == 1)
            try await client.query(
                PostgresQuery(
                    unsafeSQL: "UPDATE \(table) SET keep_until = keep_until - interval '2 seconds' "
                        + "WHERE partition = ' invalidated'"
                )
            )
            try await store.store(answered("after", sent: Date()), for: key)
            #expect(try await store.responses(for: key).map(\.body) == [Data("after".utf8)])

            // A second invalidation keeps the later note; the note's row is the only one left of the resource.
            try await store.removeResponses(forResource: key.resource)
            try await store.removeResponses(forResource: key.resource)
            #expect(try await rowCount(client, table) == 2)
            // Ten minutes later the note has expired: the cleanup deletes it, and an old response is stored again.
            try await client.query(
                PostgresQuery(unsafeSQL: "UPDATE \(table) SET keep_until = clock_timestamp() - interval '1 second'")
            )
            #expect(try await store.removeExpired() == 2)
            try await store.store(response("predates it", received: noted.addingTimeInterval(-30)), for: key)
            #expect(try await store.responses(for: key).count == 1)
        }
    }

    @Test("Two replicas with one secret, each with its own store on one table: one origin fetch for a credential")
    func replicasShare() async throws {
        try await PostgresTestServer.withClient { [secret] client, table in
            try await PostgresHTTPCacheStore(client: client, table: table).createTable()
            let transport = origin()
            let replicas = try (0..<2).map { _ in
                let store = try PostgresTestServer.cacheStore(client, table: table)
                return Client(
                    transport: transport,
                    middleware: [.caching(HTTPCache(store: store, partitionSecret: secret))]
                )
            }
            for replica in replicas {
                let (body, _) = try await replica.send(request("alice"))
                #expect(String(decoding: body, as: UTF8.self) == "for Bearer alice")
            }
            #expect(transport.callCount == 1)

            // Bob, and a caller with no credential, never get Alice's body, on either replica.
            let bob = try await replicas[1].send(request("bob"))
            let nobody = try await replicas[0].send(request(nil))
            #expect(String(decoding: bob.0, as: UTF8.self) == "for Bearer bob")
            #expect(String(decoding: nobody.0, as: UTF8.self) == "for nobody")
            #expect(transport.callCount == 3)
            let bobAgain = try await replicas[0].send(request("bob"))
            #expect(String(decoding: bobAgain.0, as: UTF8.self) == "for Bearer bob")
            #expect(transport.callCount == 3)
        }
    }

    @Test("Another secret, or none, does not share a credentialed response through the same table")
    func differentSecretsDoNotShare() async throws {
        try await PostgresTestServer.withClient { [secret] client, table in
            try await PostgresHTTPCacheStore(client: client, table: table).createTable()
            let transport = origin()
            let other = HTTPCache.PartitionSecret(Array("another secret, another fleet".utf8))
            for partitionSecret in [secret, other, nil, nil] {
                let store = try PostgresTestServer.cacheStore(client, table: table)
                let cache = HTTPCache(store: store, partitionSecret: partitionSecret)
                _ = try await Client(transport: transport, middleware: [.caching(cache)]).send(request("alice"))
            }
            #expect(transport.callCount == 4)
            #expect(try await rowCount(client, table) == 4)
        }
    }

    @Test("No credential reaches the table: not the Authorization value, the URL's password, a query key or the secret")
    func noCredentialInTable() async throws {
        try await PostgresTestServer.withClient { [secret] client, table in
            let store = try PostgresTestServer.cacheStore(client, table: table)
            try await store.createTable()
            let transport = MockTransport { _ in
                .status(
                    200,
                    body: "report",
                    headers: ["Cache-Control": "public, max-age=60", "Vary": "Authorization, Accept"]
                )
            }
            let api = Client(
                transport: transport,
                middleware: [.caching(HTTPCache(store: store, partitionSecret: secret))]
            )
            var request = URLRequest(
                url: URL(string: "https://reporter:pa55word-xyz@api.example.test/report?api_key=query-secret-123")!
            )
            request.setValue("Bearer alice-token-123", forHTTPHeaderField: "Authorization")
            request.setValue("application/json", forHTTPHeaderField: "Accept")
            _ = try await api.send(request)
            _ = try await api.send(request)
            #expect(transport.callCount == 1, "stored and found again")

            var columns: [Data] = []
            let rows = try await client.query(
                PostgresQuery(
                    unsafeSQL: "SELECT resource_hash, partition::bytea, variant_hash, fields, body FROM \(table)"
                )
            )
            for try await row in rows.decode((Data, Data, Data, Data, Data).self) {
                columns += [row.0, row.1, row.2, row.3, row.4]
            }
            #expect(columns.count == 5)
            let table = columns.reduce(Data(), +)
            for secretText in ["alice-token-123", "pa55word-xyz", "query-secret-123", "a secret the replicas share"] {
                #expect(table.range(of: Data(secretText.utf8)) == nil, "\(secretText) is in the table")
            }
            // What is there: the variant records that the request had a credential, and the body.
            #expect(table.range(of: Data("authorization:(credential)".utf8)) != nil)
            #expect(table.range(of: Data("report".utf8)) != nil)
        }
    }

    @Test("A response carrying a credential header is not written; the cache reports storeFailed and answers")
    func credentialHeaderInResponseIsRefused() async throws {
        try await PostgresTestServer.withClient { client, table in
            let store = try PostgresTestServer.cacheStore(client, table: table)
            try await store.createTable()
            let events = Locked<[CacheEvent.Kind]>([])
            let transport = MockTransport { _ in
                .status(
                    200,
                    body: "hello",
                    headers: ["Cache-Control": "public, max-age=60", "X-Session-Token": "s3cr3t"]
                )
            }
            let cache = HTTPCache(store: store, onEvent: { event in events.withLock { $0.append(event.kind) } })
            let (body, response) = try await Client(transport: transport, middleware: [.caching(cache)])
                .send(URLRequest(url: Self.url))
            #expect(String(decoding: body, as: UTF8.self) == "hello")
            #expect(response.statusCode == 200)
            #expect(events.value == [.miss, .storeFailed])
            #expect(try await rowCount(client, table) == 0)
        }
    }

    @Test("Fills: one holder at a time per key, released by its holder only, its waiters woken by NOTIFY")
    func fillContract() async throws {
        try await PostgresTestServer.withClient { client, table in
            let a = try PostgresTestServer.cacheStore(client, table: table, fillLease: .seconds(30))
            let b = try PostgresTestServer.cacheStore(client, table: table, fillLease: .seconds(30))
            try await a.createTable()
            let key = HTTPCacheKey(resource: Self.url.absoluteString, partition: "GET")
            let otherKey = HTTPCacheKey(
                resource: Self.url.absoluteString,
                partition: "GET 0123456789abcdef0123456789abcdef"
            )
            #expect(try await a.beginFill(for: key, holder: "a") == nil)
            let left = try #require(try await b.beginFill(for: key, holder: "b"))
            #expect(left > .seconds(10) && left <= .seconds(30))
            #expect(try await b.beginFill(for: otherKey, holder: "b") == nil, "another partition is another fill")
            try await b.endFill(for: key, holder: "b")  // not b's: changes nothing
            #expect(try await b.beginFill(for: key, holder: "b") != nil)

            let start = ContinuousClock.now
            async let waited: Void = b.waitForFill(of: key, timeout: .seconds(30))
            // Ending before the waiter listens is fine too: it checks the row once listening.
            try await a.endFill(for: key, holder: "a")
            try await waited
            #expect(ContinuousClock.now - start < .seconds(10))
            #expect(try await b.beginFill(for: key, holder: "b") == nil)
        }
    }

    @Test("A holder that died: its fill ends with its lease, on the database's clock, and the next replica takes it")
    func fillLeaseExpires() async throws {
        try await PostgresTestServer.withClient { client, table in
            let store = try PostgresTestServer.cacheStore(client, table: table, fillLease: .milliseconds(300))
            try await store.createTable()
            let key = HTTPCacheKey(resource: Self.url.absoluteString, partition: "GET")
            let start = ContinuousClock.now
            #expect(try await store.beginFill(for: key, holder: "dead") == nil)
            if let left = try await store.beginFill(for: key, holder: "next") {
                #expect(left <= .milliseconds(300))
                // Nothing notifies (the holder is dead): the wait ends at its timeout, when the lease has ended.
                try await store.waitForFill(of: key, timeout: left + .milliseconds(50))
                #expect(try await store.beginFill(for: key, holder: "next") == nil)
            }
            #expect(ContinuousClock.now - start >= .milliseconds(300))
            // A cleanup deletes a dead holder's row.
            #expect(
                try await store.beginFill(
                    for: HTTPCacheKey(resource: "https://x.test/", partition: "GET"),
                    holder: "dead"
                ) == nil
            )
            let fills = { () async throws -> Int in
                let rows = try await client.query(
                    PostgresQuery(unsafeSQL: "SELECT count(*)::bigint FROM \(table)_fills")
                )
                for try await count in rows.decode(Int.self) { return count }
                return -1
            }
            #expect(try await fills() == 2)
            try await store.waitForFill(
                of: HTTPCacheKey(resource: "https://x.test/", partition: "GET"),
                timeout: .milliseconds(350)
            )
            try await store.removeExpired()
            #expect(try await fills() == 0)
        }
    }

    @Test(
        "8 replicas miss one credentialed response at the same moment: one origin fetch, every replica gets it",
        arguments: [true, false]
    )
    func oneFetchForConcurrentMisses(coordinated: Bool) async throws {
        try await PostgresTestServer.withClient { [secret] client, table in
            try await PostgresHTTPCacheStore(client: client, table: table).createTable()
            let arrived = Arrivals()
            let release = Gate()
            let transport = MockTransport { request in
                arrived.arrive()
                await release.wait()
                return .status(
                    200,
                    body: "for \(request.header("Authorization") ?? "nobody")",
                    headers: ["Cache-Control": "public, max-age=60"]
                )
            }
            let waits = Arrivals()
            let replicas = try (0..<8).map { _ in
                // A generous store timeout: eight replicas share one pool, and a lookup that gave up at the default
                // 1 s on a busy machine would fetch on its own, which is not what this test is about.
                let store = try PostgresHTTPCacheStore(
                    client: client,
                    table: table,
                    timeout: .seconds(10),
                    fillLease: coordinated ? .seconds(30) : nil
                )
                let counted = WaitCountingStore(store, waits: waits)
                return Client(
                    transport: transport,
                    middleware: [.caching(HTTPCache(store: counted, partitionSecret: secret))]
                )
            }
            let bodies = try await withThrowingTaskGroup(of: String.self) { group in
                for replica in replicas {
                    group.addTask { String(decoding: try await replica.send(request("alice")).0, as: UTF8.self) }
                }
                // The origin answers once seven replicas wait for the eighth, or once all eight asked it.
                try await waitUntil { waits.count >= 7 || arrived.count >= 8 }
                release.open()
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(bodies == Array(repeating: "for Bearer alice", count: 8))
            if coordinated {
                #expect(transport.callCount == 1)
            } else {
                #expect(transport.callCount == 8, "without coordination, each replica fetches")
            }
            // Bob's request still goes to the origin and gets Bob's body.
            let bob = try await replicas[3].send(request("bob"))
            #expect(String(decoding: bob.0, as: UTF8.self) == "for Bearer bob")
        }
    }

    @Test("A database that accepts connections and never answers: each operation gives up at the store's timeout")
    func silentDatabase() async throws {
        let silent = try SilentListener()
        defer { silent.close() }
        try await PostgresTestServer.withClient(
            configuration: PostgresTestServer.configuration(port: silent.port),
            dropTable: false
        ) { client, table in
            let clock = ManualClock()
            let store = try PostgresHTTPCacheStore(client: client, table: table, timeout: .seconds(1), clock: clock)
            let events = Locked<[CacheEvent.Kind]>([])
            let cache = HTTPCache(store: store, onEvent: { event in events.withLock { $0.append(event.kind) } })
            let transport = origin()
            let api = Client(transport: transport, middleware: [.caching(cache)])
            let (body, _) = try await clock.run { try await api.send(request(nil)) }
            #expect(String(decoding: body, as: UTF8.self) == "for nobody")
            // A lookup, the shared call's second lookup, the fill's begin (failed: fetched without a fill) and the
            // store: one timeout each, no more.
            #expect(clock.now.offset <= .seconds(4))
            #expect(events.value == [.storeFailed, .storeFailed, .storeFailed, .miss, .storeFailed])
            #expect(transport.callCount == 1)
        }
    }

    @Test("The caller's deadline ends its wait for a database that never answers, however long the store's timeout")
    func callerDeadlineWhileConnecting() async throws {
        let silent = try SilentListener()
        defer { silent.close() }
        try await PostgresTestServer.withClient(
            configuration: PostgresTestServer.configuration(port: silent.port),
            dropTable: false
        ) { client, table in
            try await expectCallerDeadline(client: client, table: table)
        }
    }

    @Test("The caller's deadline ends its wait for a query stuck behind a lock, however long the store's timeout")
    func callerDeadlineWhileQueryWaits() async throws {
        try await PostgresTestServer.withClient { client, table in
            try await PostgresHTTPCacheStore(client: client, table: table).createTable()
            // Another session holds the table in ACCESS EXCLUSIVE mode: every statement on it waits.
            try await PostgresTestServer.whileLocked(client, "LOCK TABLE \(table) IN ACCESS EXCLUSIVE MODE") {
                try await expectCallerDeadline(client: client, table: table)
            }
        }
    }

    /// A call with a one-second deadline through a cache whose store would wait ten minutes: it ends at its
    /// deadline, having asked the server nothing.
    private func expectCallerDeadline(client: PostgresClient, table: String) async throws {
        let clock = ManualClock()
        let store = try PostgresHTTPCacheStore(client: client, table: table, timeout: .seconds(600), clock: clock)
        let transport = origin()
        let api = Client(
            transport: transport,
            middleware: [.timeout(.seconds(1), clock: clock), .caching(HTTPCache(store: store))]
        )
        await #expect {
            try await clock.run { try await api.send(request(nil)) }
        } throws: { error in
            (error as? CourierError)?.code == .timedOut
        }
        #expect(clock.now.offset == .seconds(1))
        #expect(transport.callCount == 0)
    }
}

/// A store that counts the calls of `waitForFill` as they begin, and passes everything on.
private struct WaitCountingStore: HTTPCacheStore {
    let base: PostgresHTTPCacheStore
    let waits: Arrivals

    init(_ base: PostgresHTTPCacheStore, waits: Arrivals) {
        self.base = base
        self.waits = waits
    }

    var coordinatesFills: Bool { base.coordinatesFills }

    func responses(for key: HTTPCacheKey) async throws -> [CachedResponse] { try await base.responses(for: key) }
    func store(_ response: CachedResponse, for key: HTTPCacheKey) async throws {
        try await base.store(response, for: key)
    }
    func removeResponses(forResource resource: String) async throws {
        try await base.removeResponses(forResource: resource)
    }
    func beginFill(for key: HTTPCacheKey, holder: String) async throws -> Duration? {
        try await base.beginFill(for: key, holder: holder)
    }
    func endFill(for key: HTTPCacheKey, holder: String) async throws {
        try await base.endFill(for: key, holder: holder)
    }
    func waitForFill(of key: HTTPCacheKey, timeout: Duration) async throws {
        waits.arrive()
        try await base.waitForFill(of: key, timeout: timeout)
    }
}

/// A TCP listener on 127.0.0.1 that never accepts: connections complete (the kernel's backlog) and nothing is
/// ever said on them, like a database stuck on a lock or a dead peer behind a proxy.
final class SilentListener: Sendable {
    let port: Int
    private let descriptor: Int32

    init() throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let descriptor = self.descriptor
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        try #require(bound && listen(descriptor, 64) == 0)
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() {
        _ = Glibc.close(descriptor)
    }
}
#endif
