import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Middleware {
    /// A middleware whose configuration was rejected when it was made: every request fails with
    /// ``CourierError/Code/invalidRequest`` and `message`, and nothing is sent.
    ///
    /// Factories use it instead of a precondition, so that bad configuration (a header value read from the
    /// environment, say) never crashes a server and never reaches the transport.
    static func failing(name: String, message: String) -> Middleware {
        Middleware(name: name) { request, _ in
            throw CourierError.invalidRequest(message, request: request)
        }
    }
}
