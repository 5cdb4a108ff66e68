extension CourierError: CustomReflectable {
    /// What `dump`, debuggers and other reflection show: the public information, redacted as in
    /// ``debugDescription``.
    ///
    /// Without it, reflection would walk the stored properties: the underlying error's user-info (a
    /// `URLError`'s failing URL, with its user-info and token parameters) and the raw response body. Here the
    /// underlying error appears as its redacted description and the body as ``bodyPreview``. The children are
    /// listed explicitly, so a stored property added later is not shown unless it is added here.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "code": code,
                "message": Redaction.redactedText(message),
                "method": method as Any,
                "redactedURL": redactedURL.map(Redaction.redactedURLString) as Any,
                "statusCode": statusCode as Any,
                "responseHeaders": responseHeaders.mapValues(Redaction.redactedText),
                "bodyPreview": bodyPreview as Any,
                "middleware": middleware as Any,
                "underlying": underlying.map(TransportFailure.describeUnderlying) as Any,
                "timeout": timeout as Any,
                "timeoutScope": timeoutScope as Any,
                "attempts": attempts as Any,
                "elapsed": elapsed as Any,
            ],
            displayStyle: .struct
        )
    }
}

extension CourierError.Code: CustomReflectable {
    /// The code's name (`timedOut`) and nothing else.
    public var customMirror: Mirror {
        Mirror(self, children: [], displayStyle: .struct)
    }
}
