extension HTTPCache.PartitionSecret: CustomReflectable {
    /// The key shows as `<redacted>`: its bytes never appear in `dump(secret)` or a debugger.
    public var customMirror: Mirror {
        Mirror(self, children: ["key": Redaction.placeholder], displayStyle: .struct)
    }
}
