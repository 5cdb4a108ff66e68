#if Postgres
import Crypto
import Foundation

extension PostgresSharedTokenStore {
    /// The key a ``PostgresSharedTokenStore`` seals the tokens it stores with (AES-256-GCM), so that whoever reads
    /// the table, a backup or a replica's log without the key learns neither the access token nor the refresh
    /// token.
    ///
    /// ```swift
    /// let key = try PostgresSharedTokenStore.SealingKey(base64: environment["TOKEN_SEALING_KEY"]!)
    /// let store = try PostgresSharedTokenStore(client: postgres, name: "billing-api", sealingKey: key)
    /// ```
    ///
    /// Draw it at random (32 bytes, for example `openssl rand -base64 32`), give the same key to every replica,
    /// and keep it where the service keeps its other secrets, not in the database. It is never stored, logged or
    /// described: its `description`, `debugDescription` and reflection (`dump`, a debugger) show `<redacted>`.
    /// To change it, give the new key as the store's key and the old one in its previous keys until every token
    /// sealed with the old one has been replaced (one refresh).
    public struct SealingKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
        let key: SymmetricKey

        /// How many bytes a key has: AES-256.
        public static let byteCount = 32

        /// A key of these bytes, exactly ``byteCount`` of them.
        ///
        /// - Throws: ``CourierError/Code/invalidRequest`` when there are not exactly 32 bytes.
        public init(_ bytes: some Sequence<UInt8>) throws(CourierError) {
            let bytes = Array(bytes)
            guard bytes.count == Self.byteCount else { throw Self.wrongLength(bytes.count) }
            key = SymmetricKey(data: bytes)
        }

        /// A key from base64 text, as a secret manager or an environment variable gives it (surrounding
        /// whitespace and a final newline are ignored).
        ///
        /// - Throws: ``CourierError/Code/invalidRequest`` when the text is not base64 or does not decode to
        ///   exactly 32 bytes. The message never quotes the text.
        public init(base64 text: String) throws(CourierError) {
            guard let bytes = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw CourierError(
                    .invalidRequest,
                    message: "a token sealing key must be 32 bytes in base64 (openssl rand -base64 32): not base64"
                )
            }
            try self.init(bytes)
        }

        /// `SealingKey(<redacted>)`: never the key.
        public var description: String { "SealingKey(\(Redaction.placeholder))" }

        /// `SealingKey(<redacted>)`: never the key.
        public var debugDescription: String { description }

        private static func wrongLength(_ count: Int) -> CourierError {
            CourierError(
                .invalidRequest,
                message: "a token sealing key must be 32 bytes in base64 (openssl rand -base64 32), not \(count)"
            )
        }
    }
}

extension PostgresSharedTokenStore.SealingKey: CustomReflectable {
    /// The key shows as `<redacted>`: its bytes never appear in `dump(key)` or a debugger.
    public var customMirror: Mirror {
        Mirror(self, children: ["key": Redaction.placeholder], displayStyle: .struct)
    }
}
#endif
