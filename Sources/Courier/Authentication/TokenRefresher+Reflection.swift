extension TokenRefresher.Token: CustomReflectable {
    /// The expiry and never the value, so `dump(token)` and debuggers do not print the credential.
    public var customMirror: Mirror {
        Mirror(self, children: ["value": Redaction.placeholder, "expiresIn": expiresIn as Any], displayStyle: .struct)
    }
}

extension TokenRefresher: CustomReflectable {
    /// The version, the refresh count and the configuration; never the token (which reflection would
    /// otherwise reach through the stored credential).
    public nonisolated var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "version": version, "refreshCount": refreshCount, "leeway": leeway, "limit": limit,
            ],
            displayStyle: .class
        )
    }
}
