#if Postgres
import Courier
import CourierTesting
import Foundation
import Logging
import PostgresNIO
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite(
    "PostgresSharedTokenStore seals its tokens at rest",
    .enabled(if: PostgresTestServer.url != nil, PostgresTestServer.skipReason),
    .timeLimit(.minutes(1))
)
struct PostgresTokenSealingTests {
    static let keyBytes = (0..<32).map { UInt8(200 + $0 % 50) }
    static let key = try! PostgresSharedTokenStore.SealingKey(keyBytes)
    static let otherKey = try! PostgresSharedTokenStore.SealingKey(
        base64: Data(repeating: 9, count: 32).base64EncodedString()
    )

    /// The row as PostgreSQL prints it (`row::text`: a bytea column shows as hex), for `name` in `table`.
    static func rawRow(_ client: PostgresClient, table: String, name: String) async throws -> String {
        let rows = try await client.query(
            PostgresQuery(unsafeSQL: "SELECT t::text FROM \(table) t WHERE name = '\(name)'")
        )
        for try await text in rows.decode(String.self) { return text }
        throw CourierError(.invalidRequest, message: "no row \(name) in \(table)")
    }

    /// Whether `text` holds `secret` in any form a reader could take it from: as text, as hex, as base64.
    static func exposes(_ text: String, _ secret: some Sequence<UInt8>) -> Bool {
        let bytes = Data(secret)
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        let decimal = bytes.map(String.init).joined(separator: ", ")
        return text.contains(String(decoding: bytes, as: UTF8.self)) || text.lowercased().contains(hex)
            || text.contains(bytes.base64EncodedString()) || text.contains(decimal)
    }

    static func execute(_ client: PostgresClient, _ sql: String) async throws {
        try await client.query(PostgresQuery(unsafeSQL: sql))
    }

    /// Expects `body` to throw the store's "does not open" error, and that error to quote no secret.
    static func expectSealedShut(
        _ secrets: [String] = [],
        sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () async throws -> Void
    ) async {
        do {
            try await body()
            Issue.record("opened", sourceLocation: sourceLocation)
        } catch let error as CourierError {
            #expect(error.code == .decodingFailed, sourceLocation: sourceLocation)
            #expect(error.message.contains("does not open"), "\(error)", sourceLocation: sourceLocation)
            for secret in secrets {
                #expect(!exposes("\(error)", Data(secret.utf8)), sourceLocation: sourceLocation)
            }
        } catch {
            Issue.record("not a CourierError: \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test("A raw read of the row holds neither the access token nor the refresh token")
    func notInClear() async throws {
        try await PostgresTestServer.withClient { client, table in
            let store = try PostgresSharedTokenStore(client: client, name: "api", table: table, sealingKey: Self.key)
            try await store.createTable()
            let access = "access-token-0123456789"
            let refresh = "refresh-token-9876543210"
            _ = try await store.replaceToken(SharedToken(access, refreshToken: refresh, version: 0))
            var raw = try await Self.rawRow(client, table: table, name: "api")
            #expect(!Self.exposes(raw, Data(access.utf8)), "\(raw)")
            #expect(!Self.exposes(raw, Data(refresh.utf8)), "\(raw)")
            // Through the lease path too.
            _ = try await store.beginRefresh(after: 1, holder: "a", lease: .seconds(30))
            let next = SharedToken("\(access)-2", refreshToken: "\(refresh)-2", version: 2)
            try await store.finishRefresh(next, holder: "a")
            raw = try await Self.rawRow(client, table: table, name: "api")
            #expect(!Self.exposes(raw, Data(next.value.utf8)), "\(raw)")
            #expect(!Self.exposes(raw, Data(next.refreshToken!.utf8)), "\(raw)")
            #expect(!Self.exposes(raw, Self.keyBytes), "\(raw)")
            #expect(try await store.token() == next)
        }
    }

    @Test("Round trip: every replica with the key, however it spells the table, reads what another stored")
    func roundTrip() async throws {
        try await PostgresTestServer.withClient { client, table in
            let a = try PostgresSharedTokenStore(client: client, name: "api", table: table, sealingKey: Self.key)
            let b = try PostgresSharedTokenStore(
                client: client,
                name: "api",
                table: "public.\(table)",
                sealingKey: Self.key
            )
            try await a.createTable()
            let expiry = Date(timeIntervalSince1970: 2e9)
            let first = try await a.replaceToken(SharedToken("t1", refreshToken: "r1", expiresAt: expiry, version: 0))
            #expect(first.version == 1)
            #expect(try await b.token() == first)
            #expect(try await b.beginRefresh(after: 0, holder: "b", lease: .seconds(30)) == .newer(first))
            #expect(try await b.beginRefresh(after: 1, holder: "b", lease: .seconds(30)) == .acquired(first))
            // No refresh token, and an empty value: both round-trip.
            let second = SharedToken("", version: 2)
            #expect(try await b.finishRefresh(second, holder: "b") == second)
            #expect(try await a.token() == second)
            #expect(try await a.finishRefresh(SharedToken("late", version: 2), holder: "a") == second)
            let unicode = try await a.replaceToken(SharedToken("jeton-é-🔑", refreshToken: "ré", version: 0))
            #expect(try await b.token() == unicode)
        }
    }

    @Test("A token that never expires (expires_in of 2⁶³ s, an infinite date) is stored and read back, no trap")
    func farFutureExpiry() async throws {
        try await PostgresTestServer.withClient { client, table in
            let store = try PostgresSharedTokenStore(client: client, name: "api", table: table, sealingKey: Self.key)
            try await store.createTable()
            let century = Date(timeIntervalSinceNow: 100 * 366 * 86_400)
            for expiry in [Date(timeIntervalSinceNow: 1e13), Date(timeIntervalSinceReferenceDate: .infinity)] {
                let stored = try await store.replaceToken(SharedToken("t", expiresAt: expiry, version: 0))
                #expect(try await store.token() == stored)
                #expect(try #require(stored.expiresAt) > century)
            }
            // Through a refresher, as a token endpoint's reply comes.
            let other = try PostgresSharedTokenStore(client: client, name: "other", table: table, sealingKey: Self.key)
            let refresher = TokenRefresher(token: .init("t1", refreshToken: "r1"), sharing: .init(store: other)) { _ in
                .init("t2", expiresIn: .seconds(Int64.max))
            }
            #expect(try await refresher.refresh().value == "t2")
            #expect(try #require(try await other.token()?.expiresAt) > century)
        }
    }

    @Test("A replica with another key fails clearly, takes no lease, and a token set over it heals the row")
    func wrongKey() async throws {
        try await PostgresTestServer.withClient { client, table in
            let right = try PostgresSharedTokenStore(client: client, name: "api", table: table, sealingKey: Self.key)
            let wrong = try PostgresSharedTokenStore(
                client: client,
                name: "api",
                table: table,
                sealingKey: Self.otherKey
            )
            try await right.createTable()
            _ = try await right.replaceToken(SharedToken("secret-access", refreshToken: "secret-refresh", version: 0))
            let secrets = ["secret-access", "secret-refresh"]
            await Self.expectSealedShut(secrets) { _ = try await wrong.token() }
            await Self.expectSealedShut(secrets) {
                _ = try await wrong.beginRefresh(after: 0, holder: "wrong", lease: .seconds(30))
            }
            await Self.expectSealedShut(secrets) {
                _ = try await wrong.beginRefresh(after: 1, holder: "wrong", lease: .seconds(30))
            }
            #expect(try await right.leasesTaken() == 0)
            // Its failed refresh still releases the lease it holds: the error comes after the commit.
            _ = try await right.beginRefresh(after: 1, holder: "wrong", lease: .seconds(30))
            await Self.expectSealedShut(secrets) { try await wrong.finishRefresh(nil, holder: "wrong") }
            guard case .acquired = try await right.beginRefresh(after: 1, holder: "right", lease: .seconds(30)) else {
                Issue.record("the lease was not released")
                return
            }
            try await right.finishRefresh(nil, holder: "right")
            // Nor does it replace the fleet's token it cannot read with its own.
            await Self.expectSealedShut(secrets) {
                try await wrong.finishRefresh(SharedToken("mine", version: 2), holder: "wrong")
            }
            #expect(try await right.token()?.value == "secret-access")
            // A token set (the user signed in again) is stored without opening the old one.
            let replaced = try await wrong.replaceToken(SharedToken("new", version: 0))
            #expect(try await wrong.token() == replaced)
            await Self.expectSealedShut { _ = try await right.token() }
        }
    }

    @Test(
        "A refresher whose store holds a newer token it cannot open reports it and fails, never refreshing by itself"
    )
    func refresherReportsIt() async throws {
        try await PostgresTestServer.withClient { client, table in
            let right = try PostgresSharedTokenStore(client: client, table: table, sealingKey: Self.key)
            try await right.createTable()
            _ = try await right.replaceToken(SharedToken("t1", refreshToken: "r1", version: 0))
            let events = Locked<[TokenRefresher.Sharing.Event]>([])
            let sharing = TokenRefresher.Sharing(
                store: try PostgresSharedTokenStore(client: client, table: table, sealingKey: Self.otherKey),
                onEvent: { event in events.withLock { $0.append(event) } }
            )
            let presented = Locked<[String?]>([])
            let refresher = TokenRefresher(token: .init("t0", refreshToken: "r0"), sharing: sharing) { replaced in
                presented.withLock { $0.append(replaced.refreshToken) }
                return .init("local-\(replaced.value)")
            }
            let error = await #expect(throws: CourierError.self) { try await refresher.refresh() }
            #expect(error?.code == .refreshFailed)
            #expect(presented.value.isEmpty)
            let failures = events.value.compactMap { event -> CourierError? in
                guard case .storeFailed("beginRefresh", let error) = event else { return nil }
                return error as? CourierError
            }
            #expect(failures.map(\.code) == [.decodingFailed])
        }
    }

    @Test("A key rotation deployed in one step: a replica with only the old key never presents a used refresh token")
    func rollingRotationInOneStep() async throws {
        try await PostgresTestServer.withClient { client, table in
            let deployed = try PostgresSharedTokenStore(
                client: client,
                name: "api",
                table: table,
                sealingKey: Self.otherKey,
                previousSealingKeys: [Self.key]
            )
            let notYet = try PostgresSharedTokenStore(client: client, name: "api", table: table, sealingKey: Self.key)
            try await deployed.createTable()
            let presented = Locked<[String?]>([])
            func refresher(_ store: PostgresSharedTokenStore) -> TokenRefresher {
                TokenRefresher(token: .init("t1", refreshToken: "r1"), sharing: .init(store: store)) { replaced in
                    presented.withLock { $0.append(replaced.refreshToken) }
                    return .init("t-\(presented.value.count + 1)", refreshToken: "r-\(presented.value.count + 1)")
                }
            }
            #expect(try await refresher(deployed).refresh().value == "t-2")
            await #expect(throws: CourierError.self) { try await refresher(notYet).refresh() }
            #expect(presented.value == ["r1"])
        }
    }

    @Test("The Fleet article's three-deploy key rotation: every replica refreshes or adopts, no refresh token twice")
    func rotationInThreeDeploys() async throws {
        try await PostgresTestServer.withClient { client, table in
            func store(
                sealing: PostgresSharedTokenStore.SealingKey,
                previous: [PostgresSharedTokenStore.SealingKey]
            )
                throws -> PostgresSharedTokenStore
            {
                try PostgresSharedTokenStore(
                    client: client,
                    name: "api",
                    table: table,
                    sealingKey: sealing,
                    previousSealingKeys: previous
                )
            }
            let (old, new) = (Self.key, Self.otherKey)
            let before = try store(sealing: old, previous: [])
            let first = try store(sealing: old, previous: [new])  // 1. the new key known
            let second = try store(sealing: new, previous: [old])  // 2. sealing with the new key
            let third = try store(sealing: new, previous: [])  // 3. the old key dropped
            try await before.createTable()
            let presented = Locked<[String?]>([])
            // A replica (re)started: it adopts the fleet's token, then refreshes it.
            func replicaRefreshes(_ store: PostgresSharedTokenStore) async throws {
                let refresher = TokenRefresher(token: .init("t0", refreshToken: "r0"), sharing: .init(store: store)) {
                    replaced in
                    let count = presented.withLock { presented in
                        presented.append(replaced.refreshToken)
                        return presented.count
                    }
                    return .init("t\(count)", refreshToken: "r\(count)")
                }
                _ = try await refresher.refresh()
                _ = try await refresher.refresh()
            }
            // Each deploy rolls out while replicas of the one before still run, and step 3 waits for a refresh under
            // the new key.
            for replica in [before, first, before, second, first, second, third] {
                try await replicaRefreshes(replica)
            }
            #expect(presented.value.count >= 7)
            #expect(Set(presented.value).count == presented.value.count, "\(presented.value)")
        }
    }

    @Test("Altered bytes, a changed format byte or a cut value do not open")
    func tampered() async throws {
        try await PostgresTestServer.withClient { client, table in
            let store = try PostgresSharedTokenStore(client: client, name: "api", table: table, sealingKey: Self.key)
            try await store.createTable()
            for (index, alteration) in [
                "sealed_value = set_byte(sealed_value, 20, get_byte(sealed_value, 20) # 1)",
                "sealed_value = set_byte(sealed_value, length(sealed_value) - 1, get_byte(sealed_value, length(sealed_value) - 1) # 128)",
                "sealed_refresh_token = set_byte(sealed_refresh_token, 5, get_byte(sealed_refresh_token, 5) # 4)",
                "sealed_value = set_byte(sealed_value, 0, 2)",
                "sealed_value = substring(sealed_value from 1 for 20)",
                "sealed_refresh_token = ''::bytea",
            ].enumerated() {
                _ = try await store.replaceToken(SharedToken("t\(index)", refreshToken: "r\(index)", version: 0))
                #expect(try await store.token()?.value == "t\(index)")
                try await Self.execute(client, "UPDATE \(table) SET \(alteration) WHERE name = 'api'")
                await Self.expectSealedShut { _ = try await store.token() }
            }
        }
    }

    @Test("A sealed value moved to another name, column, version or table does not open")
    func moved() async throws {
        try await PostgresTestServer.withClient { client, table in
            let a = try PostgresSharedTokenStore(client: client, name: "a", table: table, sealingKey: Self.key)
            let b = try PostgresSharedTokenStore(client: client, name: "b", table: table, sealingKey: Self.key)
            try await a.createTable()
            _ = try await a.replaceToken(SharedToken("ta", refreshToken: "ra", version: 0))
            _ = try await b.replaceToken(SharedToken("tb", refreshToken: "rb", version: 0))
            #expect(try await b.token()?.value == "tb")

            // To another name at the same version.
            try await Self.execute(
                client,
                """
                UPDATE \(table) SET (sealed_value, sealed_refresh_token, version) =
                    (SELECT sealed_value, sealed_refresh_token, version FROM \(table) WHERE name = 'a')
                WHERE name = 'b'
                """
            )
            await Self.expectSealedShut { _ = try await b.token() }
            #expect(try await a.token()?.value == "ta")

            // The value into the refresh token's column and back.
            try await Self.execute(
                client,
                "UPDATE \(table) SET sealed_value = sealed_refresh_token, sealed_refresh_token = sealed_value WHERE name = 'a'"
            )
            await Self.expectSealedShut { _ = try await a.token() }
            try await Self.execute(
                client,
                "UPDATE \(table) SET sealed_value = sealed_refresh_token, sealed_refresh_token = sealed_value WHERE name = 'a'"
            )
            #expect(try await a.token()?.value == "ta")

            // To another version of the same row: an old sealed token replayed under a newer version.
            try await Self.execute(client, "UPDATE \(table) SET version = version + 1 WHERE name = 'a'")
            await Self.expectSealedShut { _ = try await a.token() }
            try await Self.execute(client, "UPDATE \(table) SET version = version - 1 WHERE name = 'a'")
            #expect(try await a.token()?.value == "ta")

            // To another table, under the same name and version.
            let copy = "\(table)_copy"
            let moved = try PostgresSharedTokenStore(client: client, name: "a", table: copy, sealingKey: Self.key)
            try await moved.createTable()
            do {
                try await Self.execute(client, "INSERT INTO \(copy) SELECT * FROM \(table) WHERE name = 'a'")
                await Self.expectSealedShut { _ = try await moved.token() }
            } catch {
                try? await Self.execute(client, "DROP TABLE \(copy)")
                throw error
            }
            try await Self.execute(client, "DROP TABLE \(copy)")
        }
    }

    @Test("A table made before sealing, with clear-text columns: its tokens are never read, every step fails")
    func tableFromBeforeSealing() async throws {
        try await PostgresTestServer.withClient { client, table in
            try await Self.execute(
                client,
                """
                CREATE TABLE \(table) (
                    name text PRIMARY KEY, version bigint NOT NULL DEFAULT 0, value text, refresh_token text,
                    expires_at timestamptz, lease_holder text, lease_expires_at timestamptz,
                    leases_taken bigint NOT NULL DEFAULT 0
                )
                """
            )
            try await Self.execute(
                client,
                "INSERT INTO \(table) (name, version, value, refresh_token) VALUES ('default', 1, 'old-access', 'old-refresh')"
            )
            let store = try PostgresSharedTokenStore(client: client, table: table, sealingKey: Self.key)
            try await store.createTable()
            for step in ["token", "beginRefresh", "finishRefresh", "replaceToken"] {
                do {
                    switch step {
                    case "token": _ = try await store.token()
                    case "beginRefresh": _ = try await store.beginRefresh(after: 0, holder: "h", lease: .seconds(30))
                    case "finishRefresh": try await store.finishRefresh(SharedToken("new", version: 2), holder: "h")
                    default: _ = try await store.replaceToken(SharedToken("new", version: 0))
                    }
                    Issue.record("\(step) worked on a table with clear-text columns")
                } catch {
                    #expect(!"\(error)".contains("old-"), "\(step): \(error)")
                }
            }
        }
    }

    @Test("Rotation: a previous key opens, the current one seals every new write")
    func rotation() async throws {
        try await PostgresTestServer.withClient { client, table in
            let old = try PostgresSharedTokenStore(client: client, table: table, sealingKey: Self.key)
            try await old.createTable()
            let stored = try await old.replaceToken(SharedToken("t1", refreshToken: "r1", version: 0))
            let rotated = try PostgresSharedTokenStore(
                client: client,
                table: table,
                sealingKey: Self.otherKey,
                previousSealingKeys: [Self.key]
            )
            let newOnly = try PostgresSharedTokenStore(client: client, table: table, sealingKey: Self.otherKey)
            #expect(try await rotated.token() == stored)
            await Self.expectSealedShut { _ = try await newOnly.token() }
            #expect(try await rotated.beginRefresh(after: 1, holder: "r", lease: .seconds(30)) == .acquired(stored))
            let next = SharedToken("t2", refreshToken: "r2", version: 2)
            #expect(try await rotated.finishRefresh(next, holder: "r") == next)
            // Sealed with the new key: the old key alone cannot open it, the new key alone can.
            #expect(try await newOnly.token() == next)
            await Self.expectSealedShut { _ = try await old.token() }
        }
    }

    @Test("The key is never printed: description, debugDescription, reflection, the store, its logs, its errors")
    func keyNeverPrinted() async throws {
        let key = Self.key
        var dumped = ""
        dump(key, to: &dumped)
        for text in [key.description, key.debugDescription, String(reflecting: key), "\(key)", dumped] {
            #expect(text.contains("<redacted>"), "\(text)")
            #expect(!Self.exposes(text, Self.keyBytes), "\(text)")
        }
        let logs = RecordingLogHandler()
        try await PostgresTestServer.withClient { client, table in
            let store = try PostgresSharedTokenStore(
                client: client,
                table: table,
                sealingKey: key,
                previousSealingKeys: [Self.otherKey],
                logger: Logger(label: "sealing") { _ in logs }
            )
            var storeDump = ""
            dump(store, to: &storeDump)
            #expect(!storeDump.contains("SymmetricKey"), "\(storeDump)")
            #expect(!Self.exposes(storeDump, Self.keyBytes), "\(storeDump)")
            #expect(!Self.exposes(storeDump, Data(repeating: 9, count: 32)), "\(storeDump)")
            try await store.createTable()
            _ = try await store.replaceToken(SharedToken("log-access", refreshToken: "log-refresh", version: 0))
            _ = try await store.beginRefresh(after: 1, holder: "h", lease: .seconds(30))
            try await store.finishRefresh(
                SharedToken("log-access-2", refreshToken: "log-refresh-2", version: 2),
                holder: "h"
            )
            _ = try await store.token()
        }
        let lines = logs.lines
        #expect(!lines.isEmpty, "the store's logger was not used at trace level")
        for line in lines {
            #expect(!Self.exposes(line, Self.keyBytes), "\(line)")
            for secret in ["log-access", "log-refresh"] { #expect(!line.contains(secret), "\(line)") }
        }
        for bad in [
            "", "not base64!", Data(repeating: 1, count: 16).base64EncodedString(),
            Data(repeating: 1, count: 33).base64EncodedString(),
        ] {
            #expect(throws: CourierError.self, "\(bad)") { try PostgresSharedTokenStore.SealingKey(base64: bad) }
        }
        #expect(throws: CourierError.self) { try PostgresSharedTokenStore.SealingKey([1, 2, 3]) }
        // Whitespace around the text (a trailing newline from a file or `openssl rand`) is ignored.
        let padded = " \(Data(Self.keyBytes).base64EncodedString())\n"
        #expect(throws: Never.self) { try PostgresSharedTokenStore.SealingKey(base64: padded) }
    }
}

/// A log handler that records every line, with its metadata, at trace level.
private struct RecordingLogHandler: LogHandler {
    private let recorded = Locked<[String]>([])
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    var lines: [String] { recorded.value }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        recorded.withLock { $0.append("\(event.level) \(event.message) \(all) \(event.error.map { "\($0)" } ?? "")") }
    }
}
#endif
