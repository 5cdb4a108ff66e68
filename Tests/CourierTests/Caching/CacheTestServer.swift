import CourierTesting
import Foundation

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The server the caching tests talk to: one resource per path with a version and an `ETag` (`"v1"`, …), which
/// answers `If-None-Match` with a `304` when the version has not changed, and says in each body which version
/// and which credential it answered.
final class CacheTestServer: Sendable {
    struct State {
        var versions: [String: Int] = [:]
        var full = 0
        var notModified = 0
        var cacheControl = "max-age=60"
        var extraHeaders: [String: String] = [:]
        var failing: MockResponse?
    }

    let state = LockedState(State())

    var full: Int { state.withLock { $0.full } }
    var notModified: Int { state.withLock { $0.notModified } }

    func set(cacheControl: String) { state.withLock { $0.cacheControl = cacheControl } }

    /// Changes the resource at `path`, so its next answer is a full response with a new `ETag`.
    func change(_ path: String) { state.withLock { $0.versions[path, default: 1] += 1 } }

    /// Makes every answer `response` (an error status or a failure) until `nil` is set again.
    func fail(with response: MockResponse?) { state.withLock { $0.failing = response } }

    var transport: MockTransport {
        MockTransport { request in self.answer(request) }
    }

    func answer(_ request: MockRequest) -> MockResponse {
        let path = request.urlRequest.url?.path ?? "/"
        let credential = request.header("Authorization") ?? "anonymous"
        return state.withLock { state in
            if let failing = state.failing { return failing }
            let tag = "\"v\(state.versions[path, default: 1])\""
            var headers = state.extraHeaders
            headers["ETag"] = tag
            headers["Cache-Control"] = state.cacheControl
            if request.header("If-None-Match") == tag {
                state.notModified += 1
                return .status(304, headers: headers)
            }
            state.full += 1
            return .status(200, body: "\(tag) \(credential)", headers: headers)
        }
    }
}
