extension SharedToken: CustomReflectable {
    /// The version and the expiry, never the value nor the refresh token, so `dump(token)` and debuggers do not
    /// print the credential.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "value": Redaction.placeholder, "refreshToken": refreshToken.map { _ in Redaction.placeholder } as Any,
                "expiresAt": expiresAt as Any, "version": version,
            ],
            displayStyle: .struct
        )
    }
}
