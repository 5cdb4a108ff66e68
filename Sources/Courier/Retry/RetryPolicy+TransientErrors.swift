public import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension RetryPolicy {
    /// The `URLError` codes that ``isTransient(_:)`` treats as transient: the connection was lost or could
    /// not be made, the transport timed out, or the host could not be resolved or reached.
    ///
    /// `networkConnectionLost`, `cannotConnectToHost`, `timedOut`, `cannotFindHost`, `dnsLookupFailed`,
    /// `notConnectedToInternet`.
    ///
    /// Not in the list, because trying again does not help or is not safe: `cancelled`, `badURL`,
    /// `unsupportedURL`, certificate and TLS failures, `badServerResponse`, `userAuthenticationRequired`,
    /// `cannotDecodeContentData`, `dataLengthExceedsMaximum`, `httpTooManyRedirects` and the rest.
    public static let transientURLErrorCodes: Set<URLError.Code> = [
        .networkConnectionLost,
        .cannotConnectToHost,
        .timedOut,
        .cannotFindHost,
        .dnsLookupFailed,
        .notConnectedToInternet,
    ]

    /// The POSIX error codes that ``isTransient(_:)`` treats as transient, for transports that report
    /// socket errors as `POSIXError`: `ECONNRESET`, `ECONNREFUSED`, `ECONNABORTED`, `ETIMEDOUT`, `EPIPE`,
    /// `ENETDOWN`, `ENETUNREACH`, `ENETRESET` and `EHOSTUNREACH`.
    public static let transientPOSIXErrorCodes: Set<POSIXErrorCode> = [
        .ECONNRESET,
        .ECONNREFUSED,
        .ECONNABORTED,
        .ETIMEDOUT,
        .EPIPE,
        .ENETDOWN,
        .ENETUNREACH,
        .ENETRESET,
        .EHOSTUNREACH,
    ]

    /// Whether `error` is a transient failure worth retrying; the default ``isRetryable``.
    ///
    /// True for:
    /// - a `URLError` whose code is in ``transientURLErrorCodes``;
    /// - a `POSIXError` whose code is in ``transientPOSIXErrorCodes``;
    /// - a ``CourierError`` with code ``CourierError/Code/transport`` whose ``CourierError/underlying`` error
    ///   is one of those (the chain wraps every transport error this way);
    /// - a ``CourierError`` with code ``CourierError/Code/timedOut``: a per-attempt timeout placed inside
    ///   the retry. (When the whole call's deadline has passed, the retry stops anyway.)
    ///
    /// False for everything else, and always for `CancellationError`.
    ///
    /// Extend it for a transport with its own error types:
    ///
    /// ```swift
    /// policy.isRetryable = { error in
    ///     RetryPolicy.isTransient(error) || (error as? MyTransportError)?.isConnectionReset == true
    /// }
    /// ```
    ///
    /// - Parameter error: The error thrown by the rest of the chain.
    /// - Returns: Whether a retry may succeed.
    @Sendable
    public static func isTransient(_ error: any Error) -> Bool {
        switch error {
        case let error as CourierError:
            if error.code == .timedOut { return true }
            if error.code == .transport, let underlying = error.underlying { return isTransient(underlying) }
            return false
        case let error as URLError:
            return transientURLErrorCodes.contains(error.code)
        case let error as POSIXError:
            return transientPOSIXErrorCodes.contains(error.code)
        default:
            return false
        }
    }
}
