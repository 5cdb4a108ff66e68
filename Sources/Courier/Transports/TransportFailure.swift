import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Turns what a transport's underlying client reports into errors that say what happened, in one wording for
/// every transport: `cannot connect to 127.0.0.1:8080`, `the connection to api.example.com:443 was lost`.
enum TransportFailure {
    /// `host:port` of the request's URL (`[::1]:8080` for an IPv6 address), the port filled in from the scheme
    /// when the URL has none.
    static func endpoint(of request: URLRequest) -> String {
        guard let url = request.url, let host = url.host else { return "the server" }
        let port = url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// A ``CourierError/Code/transport`` error with `error` underneath for the `URLError` codes that name a
    /// connection failure; `error` itself for the others (the client wraps them) and for `cancelled`, which
    /// the client reports as `CancellationError`.
    static func describing(_ error: URLError, request: URLRequest) -> any Error {
        let endpoint = endpoint(of: request)
        let message: String
        switch error.code {
        case .cannotConnectToHost: message = "cannot connect to \(endpoint)"
        case .networkConnectionLost: message = "the connection to \(endpoint) was lost"
        case .timedOut: message = "no answer from \(endpoint) within the request's timeout interval"
        case .cannotFindHost, .dnsLookupFailed: message = "cannot find host \(request.url?.host ?? "")"
        default: return error
        }
        return CourierError(.transport, message: message, request: request, underlying: error)
    }
}
