import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension RetryEvent: CustomReflectable {
    /// What `dump` and debuggers show: the attempt, the delays, the reason's redacted description, and the
    /// request's method and redacted URL; never the request's headers or the error's user-info.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "attempt": attempt, "maximumAttempts": maximumAttempts, "delay": delay, "retryAfter": retryAfter as Any,
                "reason": reason.description, "method": RequestValidation.printableMethod(of: request),
                "url": request.url.map(Redaction.redactedURL) as Any,
            ],
            displayStyle: .struct
        )
    }
}

extension RetryEvent.Reason: CustomReflectable {
    /// The redacted ``description``, so `dump` does not walk into the error's user-info.
    public var customMirror: Mirror {
        Mirror(self, children: ["description": description], displayStyle: .enum)
    }
}
