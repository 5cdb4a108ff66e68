import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension CachedResponse {
    /// What an ``HTTPCache`` works out from one stored response and would otherwise work out again on every
    /// hit: the ``StoredFacts`` its fields say, and the last `HTTPURLResponse` it served from it.
    ///
    /// A fresh hit used to parse `Cache-Control`, `Date` and `Age` several times and build a new
    /// `HTTPURLResponse`, whose initializer alone costs ≈ 50k instructions on Linux (FoundationNetworking
    /// capitalizes and compares every header name). Copies of a ``CachedResponse`` share one memo (a store hands
    /// out copies); a ``CachedResponse`` whose status, header fields or dates change gets a new one, so a memo
    /// only ever describes the fields it was worked out from. The served response is reused only for the same
    /// URL and the same whole second of `Age`: a response served from here always carries its exact `Age`.
    ///
    /// It takes no part in the response's value: every memo equals every other and hashes to nothing, and it is
    /// never encoded. Safe to use from concurrent hits: one short lock, never held while anything is worked out
    /// or built (two hits racing to fill it both build, and the later one's result is kept).
    final class Memo: Sendable, Hashable {
        private struct State {
            var facts: StoredFacts?
            var served: Served?
        }

        /// A response served for `url` with an `Age` of `age` seconds.
        private struct Served {
            let url: URL
            let age: Int
            let response: HTTPURLResponse
        }

        private let state = LockedState(State())

        /// The facts of `response`, the response this memo belongs to: worked out on the first call.
        func facts(of response: CachedResponse) -> StoredFacts {
            if let facts = state.withLock({ $0.facts }) { return facts }
            let facts = HTTPCachePolicy.facts(of: response)
            state.withLock { $0.facts = facts }
            return facts
        }

        /// The response to serve for `url` with an `Age` of `age` seconds: the one built last time when both are
        /// the same, else `make()`'s, kept for the next hit — unless `url` carries user info or a fragment.
        ///
        /// The memo lives beside the entry in the store (copies share it), and the response it keeps holds its
        /// URL: a URL with a password or a token in its fragment, which the cache keeps out of every key it
        /// stores, is never kept here either; such a hit builds its response each time.
        func response(url: URL, age: Int, make: () -> HTTPURLResponse) -> HTTPURLResponse {
            let last = state.withLock { state -> HTTPURLResponse? in
                guard let served = state.served, served.age == age, served.url == url else { return nil }
                return served.response
            }
            if let last { return last }
            let response = make()
            guard Self.mayKeep(url) else { return response }
            state.withLock { $0.served = Served(url: url, age: age, response: response) }
            return response
        }

        /// Whether `url` has neither user info nor a fragment, read from its text's bytes.
        static func mayKeep(_ url: URL) -> Bool {
            let absolute = url.absoluteString
            return !absolute.utf8.contains(UInt8(ascii: "#")) && HTTPCachePolicy.userInfo(in: absolute) == nil
        }

        /// Always `true`: a memo holds only what its response's fields determine.
        static func == (lhs: Memo, rhs: Memo) -> Bool { true }

        /// Adds nothing: see ``==(_:_:)``.
        func hash(into hasher: inout Hasher) {}
    }
}
