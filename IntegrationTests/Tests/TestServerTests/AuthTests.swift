import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Auth endpoints", .timeLimit(.minutes(3)))
struct AuthTests {
    private static func bearer(_ token: String) -> [(String, String)] {
        [("Authorization", "Bearer \(token)")]
    }

    @Test("Each token request rotates the token: only the newest is accepted")
    func rotation() async throws {
        try await TestServers.withServer { server in
            let realm = UUID().uuidString
            let first = try await HTTP.json(TokenResponse.self, server.url("/auth/\(realm)/token"), method: "POST")
            #expect(first.expiresIn == 3600)
            let protected = server.url("/auth/\(realm)/protected")
            #expect(
                try await HTTP.json(ProtectedResponse.self, protected, headers: Self.bearer(first.token))
                    == ProtectedResponse(realm: realm)
            )

            let second = try await HTTP.json(TokenResponse.self, server.url("/auth/\(realm)/token"), method: "POST")
            #expect(second.token != first.token)
            let revoked = try await HTTP.json(
                ErrorResponse.self,
                protected,
                headers: Self.bearer(first.token),
                expectStatus: 401
            )
            #expect(revoked.error)
            _ = try await HTTP.json(
                ProtectedResponse.self,
                protected,
                headers: [("Authorization", "bearer \(second.token)")]
            )

            let stats = try await HTTP.json(AuthStats.self, server.url("/auth/\(realm)/stats"))
            #expect(
                stats
                    == AuthStats(realm: realm, tokenRequests: 2, issued: 2, refreshes: 1, accepted: 2, rejected: 1)
            )
        }
    }

    @Test("A missing or malformed token gets 401 with a WWW-Authenticate challenge")
    func missingToken() async throws {
        try await TestServers.withServer { server in
            let realm = UUID().uuidString
            _ = try await HTTP.send(server.url("/auth/\(realm)/token"), method: "POST")
            for headers in [[], [("Authorization", "Basic dXNlcjpwdw==")], Self.bearer("nonsense")] {
                let (_, response) = try await HTTP.send(server.url("/auth/\(realm)/protected"), headers: headers)
                #expect(response.statusCode == 401)
                #expect(response.value(forHTTPHeaderField: "WWW-Authenticate")?.hasPrefix("Bearer") == true)
            }
        }
    }

    @Test("/protected-403 answers a bad token with 403 and a typed error body")
    func forbidden() async throws {
        try await TestServers.withServer { server in
            let realm = UUID().uuidString
            let token = try await HTTP.json(TokenResponse.self, server.url("/auth/\(realm)/token"), method: "POST")
            let url = server.url("/auth/\(realm)/protected-403")
            let (data, response) = try await HTTP.send(url, headers: Self.bearer("stale"))
            #expect(response.statusCode == 403)
            #expect(String(decoding: data, as: UTF8.self) == #"{"code":999,"error":true,"reason":"Invalid Token."}"#)
            _ = try await HTTP.json(ProtectedResponse.self, url, headers: Self.bearer(token.token))
        }
    }

    @Test("POST /auth/:realm/expire makes the current token fail until a new one is issued")
    func expireOnDemand() async throws {
        try await TestServers.withServer { server in
            let realm = UUID().uuidString
            let expireURL = server.url("/auth/\(realm)/expire")
            #expect(try await HTTP.json([String: Bool].self, expireURL, method: "POST") == ["expired": false])

            let token = try await HTTP.json(TokenResponse.self, server.url("/auth/\(realm)/token"), method: "POST")
            let protected = server.url("/auth/\(realm)/protected")
            _ = try await HTTP.json(ProtectedResponse.self, protected, headers: Self.bearer(token.token))
            #expect(try await HTTP.json([String: Bool].self, expireURL, method: "POST") == ["expired": true])
            let expired = try await HTTP.json(
                ErrorResponse.self,
                protected,
                headers: Self.bearer(token.token),
                expectStatus: 401
            )
            #expect(expired.reason == "Expired token.")

            let fresh = try await HTTP.json(TokenResponse.self, server.url("/auth/\(realm)/token"), method: "POST")
            _ = try await HTTP.json(ProtectedResponse.self, protected, headers: Self.bearer(fresh.token))
        }
    }

    @Test("expiresIn=0 issues a token that is already expired; the server enforces expiry")
    func zeroLifetime() async throws {
        try await TestServers.withServer { server in
            let realm = UUID().uuidString
            let token = try await HTTP.json(
                TokenResponse.self,
                server.url("/auth/\(realm)/token?expiresIn=0"),
                method: "POST"
            )
            #expect(token.expiresIn == 0)
            let (_, response) = try await HTTP.send(
                server.url("/auth/\(realm)/protected"),
                headers: Self.bearer(token.token)
            )
            #expect(response.statusCode == 401)
        }
    }

    @Test("?fail= answers that status and issues nothing; the request is still counted")
    func failedIssuance() async throws {
        try await TestServers.withServer { server in
            let realm = UUID().uuidString
            let (_, response) = try await HTTP.send(server.url("/auth/\(realm)/token?fail=500"), method: "POST")
            #expect(response.statusCode == 500)
            let stats = try await HTTP.json(AuthStats.self, server.url("/auth/\(realm)/stats"))
            #expect(stats.tokenRequests == 1)
            #expect(stats.issued == 0)
            #expect(stats.refreshes == 0)
        }
    }

    @Test("Realms are independent, and the paths without a realm use the default one")
    func realms() async throws {
        try await TestServers.withServer { server in
            let one = try await HTTP.json(TokenResponse.self, server.url("/auth/one/token"), method: "POST")
            let plain = try await HTTP.json(TokenResponse.self, server.url("/auth/token"), method: "POST")

            _ = try await HTTP.json(
                ProtectedResponse.self,
                server.url("/auth/one/protected"),
                headers: Self.bearer(one.token)
            )
            #expect(
                try await HTTP.json(ProtectedResponse.self, server.url("/protected"), headers: Self.bearer(plain.token))
                    == ProtectedResponse(realm: "default")
            )
            _ = try await HTTP.json(
                ProtectedResponse.self,
                server.url("/protected-403"),
                headers: Self.bearer(plain.token)
            )
            let (_, crossed) = try await HTTP.send(server.url("/protected"), headers: Self.bearer(one.token))
            #expect(crossed.statusCode == 401)

            #expect(
                try await HTTP.json([String: Bool].self, server.url("/auth/expire"), method: "POST")["expired"] == true
            )
            let (_, expired) = try await HTTP.send(server.url("/protected"), headers: Self.bearer(plain.token))
            #expect(expired.statusCode == 401)
            _ = try await HTTP.json(
                ProtectedResponse.self,
                server.url("/auth/one/protected"),
                headers: Self.bearer(one.token)
            )

            let stats = try await HTTP.json(AuthStats.self, server.url("/auth/stats"))
            #expect(stats.realm == "default")
            #expect(stats.issued == 1)
            #expect(stats.accepted == 2)
            #expect(stats.rejected == 2)
        }
    }

    @Test("?delayMs= holds the token back, so concurrent refreshes overlap")
    func delayedIssuance() async throws {
        try await TestServers.withServer { server in
            let realm = UUID().uuidString
            let clock = ContinuousClock()
            let start = clock.now
            _ = try await HTTP.json(TokenResponse.self, server.url("/auth/\(realm)/token?delayMs=100"), method: "POST")
            #expect(clock.now - start >= .milliseconds(100))
        }
    }

    @Test("/basic-auth/:user/:password accepts exactly those credentials and challenges anything else")
    func basicAuth() async throws {
        try await TestServers.withServer { server in
            let good = Data("u:p".utf8).base64EncodedString()
            let wrong = Data("u:q".utf8).base64EncodedString()
            for (authorization, status) in [("Basic \(good)", 200), ("Basic \(wrong)", 401), (nil, 401)] {
                let header = authorization.map { "Authorization: \($0)\r\n" } ?? ""
                // Raw bytes: on Linux, URLSession waits on a Basic challenge until it times out.
                let reply = try await RawHTTP.get("/basic-auth/u/p", headers: header, from: server)
                #expect(reply.status == status)
                if status == 200 {
                    #expect(String(decoding: reply.body, as: UTF8.self) == #"{"authenticated":true,"user":"u"}"#)
                } else {
                    #expect(reply.header("WWW-Authenticate") == #"Basic realm="Fake Realm""#)
                }
            }
        }
    }

    @Test(
        "/challenge/:scheme answers 401 with that scheme's challenge, or 407 with Proxy-Authenticate",
        arguments: [
            ("basic", 401, "WWW-Authenticate", "Basic realm="),
            ("digest", 401, "WWW-Authenticate", "Digest realm="),
            ("negotiate", 401, "WWW-Authenticate", "Negotiate"),
            ("proxy", 407, "Proxy-Authenticate", "Basic realm="),
        ]
    )
    func challenge(scheme: String, status: Int, header: String, prefix: String) async throws {
        try await TestServers.withServer { server in
            let reply = try await RawHTTP.get("/challenge/\(scheme)", from: server)
            #expect(reply.status == status)
            #expect(reply.header(header)?.hasPrefix(prefix) == true)
            #expect(String(decoding: reply.body, as: UTF8.self).contains("Credentials required."))
        }
    }
}
