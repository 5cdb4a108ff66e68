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
        case .cannotConnectToHost:
            message = "cannot connect to \(endpoint)" + (socketReason(of: error).map { " (\($0))" } ?? "")
        case .networkConnectionLost: message = "the connection to \(endpoint) was lost"
        case .timedOut: message = "no answer from \(endpoint) within the request's timeout interval"
        case .cannotFindHost, .dnsLookupFailed: message = "cannot find host \(request.url?.host ?? "")"
        default: return error
        }
        return CourierError(.transport, message: message, request: request, underlying: error)
    }

    /// The error for a body that failed after its head arrived, when what the client said names no cause a
    /// caller can act on (a parser's "stream ended at an unexpected time", an unknown `URLError`): a
    /// ``CourierError/Code/transport`` error that the connection was lost, with the client's error underneath.
    static func lostDuringBody(_ error: any Error, request: URLRequest) -> CourierError {
        CourierError(
            .transport,
            message: "the connection to \(endpoint(of: request)) was lost during the response body",
            request: request,
            underlying: error
        )
    }

    /// Why a connection failed, when the platform says it: Darwin's URLSession puts the socket's `errno` in
    /// the user-info of a `URLError` (FoundationNetworking on Linux does not; its explanation then says it).
    static func socketReason(of error: URLError) -> String? {
        guard (error.userInfo["_kCFStreamErrorDomainKey"] as? Int) == 1,
            let number = error.userInfo["_kCFStreamErrorCodeKey"] as? Int,
            let raw = Int32(exactly: number), let code = POSIXErrorCode(rawValue: raw)
        else { return nil }
        return socketReason(code)
    }

    /// A socket error in words, for messages such as `cannot connect to 127.0.0.1:1 (connection refused)`.
    static func socketReason(_ code: POSIXErrorCode) -> String {
        switch code {
        case .ECONNREFUSED: "connection refused"
        case .ETIMEDOUT: "the connection timed out"
        case .EHOSTUNREACH, .EHOSTDOWN: "host unreachable"
        case .ENETUNREACH, .ENETDOWN: "network unreachable"
        case .ECONNRESET: "connection reset"
        default: String(cString: strerror(code.rawValue))
        }
    }

    /// An underlying error as an error's description shows it, redacted. A `URLError` is shown by its code's
    /// name and number and its client's explanation (`URLError.cannotConnectToHost (Code=-1004): Failed to
    /// connect to 127.0.0.1 port 1`) rather than as the `NSError` it prints as, a `POSIXError` (what the
    /// AsyncHTTPClient transport puts under a socket failure) by its code's name, number and text
    /// (`POSIXError.ECONNREFUSED (Code=111): Connection refused`); other errors as they print.
    static func describeUnderlying(_ error: any Error) -> String {
        if let error = error as? POSIXError {
            let number = error.code.rawValue
            let name = posixName(error.code).map { "POSIXError.\($0)" } ?? "POSIXError"
            return "\(name) (Code=\(number)): \(String(cString: strerror(number)))"
        }
        guard let error = error as? URLError else { return Redaction.redactedText(String(describing: error)) }
        let number = error.code.rawValue
        var text = urlErrorNames[number].map { "URLError.\($0)" } ?? "URLError"
        text += " (Code=\(number))"
        if let explanation = error.userInfo[NSLocalizedDescriptionKey] as? String, !explanation.isEmpty {
            text += ": " + Redaction.redactedText(explanation)
        }
        return text
    }

    /// The names of the socket errors a connection reports.
    private static func posixName(_ code: POSIXErrorCode) -> String? {
        switch code {
        case .ECONNREFUSED: "ECONNREFUSED"
        case .ECONNRESET: "ECONNRESET"
        case .ECONNABORTED: "ECONNABORTED"
        case .ETIMEDOUT: "ETIMEDOUT"
        case .EHOSTUNREACH: "EHOSTUNREACH"
        case .EHOSTDOWN: "EHOSTDOWN"
        case .ENETUNREACH: "ENETUNREACH"
        case .ENETDOWN: "ENETDOWN"
        case .EPIPE: "EPIPE"
        case .EADDRNOTAVAIL: "EADDRNOTAVAIL"
        default: nil
        }
    }

    /// The names of `URLError.Code`s, by number (the codes print as numbers on Darwin).
    private static let urlErrorNames: [Int: String] = [
        -1: "unknown", -999: "cancelled", -1000: "badURL", -1001: "timedOut", -1002: "unsupportedURL",
        -1003: "cannotFindHost", -1004: "cannotConnectToHost", -1005: "networkConnectionLost",
        -1006: "dnsLookupFailed", -1007: "httpTooManyRedirects", -1008: "resourceUnavailable",
        -1009: "notConnectedToInternet", -1010: "redirectToNonExistentLocation", -1011: "badServerResponse",
        -1012: "userCancelledAuthentication", -1013: "userAuthenticationRequired", -1014: "zeroByteResource",
        -1015: "cannotDecodeRawData", -1016: "cannotDecodeContentData", -1017: "cannotParseResponse",
        -1018: "internationalRoamingOff", -1019: "callIsActive", -1020: "dataNotAllowed",
        -1021: "requestBodyStreamExhausted", -1022: "appTransportSecurityRequiresSecureConnection",
        -1100: "fileDoesNotExist", -1101: "fileIsDirectory", -1102: "noPermissionsToReadFile",
        -1103: "dataLengthExceedsMaximum", -1200: "secureConnectionFailed", -1201: "serverCertificateHasBadDate",
        -1202: "serverCertificateUntrusted", -1203: "serverCertificateHasUnknownRoot",
        -1204: "serverCertificateNotYetValid", -1205: "clientCertificateRejected", -1206: "clientCertificateRequired",
        -2000: "cannotLoadFromNetwork",
    ]
}
