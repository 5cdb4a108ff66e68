// Token refresh: 100 concurrent requests find that their token has expired. Exactly one refresh runs, every
// request retries once with the new token, and the request counter is back at zero at the end.
//
// Everything runs in memory: the "server" is a `MockTransport` that accepts only the fresh token.

// snippet.hide
import Courier
import CourierTesting
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// snippet.show
let refreshCalls = Locked(0)
let auth = TokenRefresher(token: .init("expired-token")) { rejected in
    // In an app: call your token endpoint (it may go through the same client).
    refreshCalls.withLock { $0 += 1 }
    return .init("fresh-token", expiresIn: .seconds(3600))
}

let server = MockTransport { request in
    request.header("Authorization") == "Bearer fresh-token" ? .ok : .status(401)
}
let counter = RequestCounter()
let client = Client(
    baseURL: URL(string: "https://api.example.com")!,
    transport: server,
    middleware: [.counting(counter), .authenticating(with: auth)]
)

let succeeded = await withTaskGroup(of: Bool.self) { group in
    for id in 0..<100 {
        group.addTask {
            let response = try? await client.response(for: Request<EmptyResponse>.get("/items/\(id)"))
            return response?.response.statusCode == 200
        }
    }
    var succeeded = 0
    for await ok in group where ok { succeeded += 1 }
    return succeeded
}
await counter.waitUntilIdle()

print("succeeded:       \(succeeded) of 100")
print("refreshes:       \(refreshCalls.value)")
print("token version:   \(auth.version)")
print("transport calls: \(server.callCount) (at most 200: a rejected try and a retry per request)")
print("counter:         \(counter.snapshot)")
