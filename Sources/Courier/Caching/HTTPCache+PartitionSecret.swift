import Foundation

extension HTTPCache {
    /// A secret the replicas of a fleet share, so that their caches file a response to a request with a
    /// credential under the same ``HTTPCacheKey/partition`` and find each other's in a shared ``HTTPCacheStore``.
    ///
    /// ```swift
    /// let secret = HTTPCache.PartitionSecret(base64: environment["CACHE_PARTITION_SECRET"]!)!
    /// let cache = HTTPCache(store: sharedStore, partitionSecret: secret)
    /// ```
    ///
    /// The partition is then HMAC-SHA-256 under this secret of the request's credential headers, cut to 128
    /// bits: two credentials still never share a partition, and nobody who reads the store without the secret
    /// can tell which credential a partition stands for, nor test a guess. The secret itself is never stored,
    /// logged or described. Draw it at random (32 bytes, for example `openssl rand -base64 32`), keep it where
    /// the service keeps its other secrets, and change it to make every shared entry of a credential unreachable.
    public struct PartitionSecret: Sendable, CustomStringConvertible {
        let key: [UInt8]

        /// A secret of these bytes; at least 16 of them.
        public init(_ bytes: some Sequence<UInt8>) {
            let key = Array(bytes)
            precondition(key.count >= 16, "a cache partition secret must have at least 16 bytes")
            self.key = key
        }

        /// A secret from base64 text, or `nil` when it is not base64 or decodes to fewer than 16 bytes.
        public init?(base64 text: String) {
            guard let data = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)),
                data.count >= 16
            else { return nil }
            self.key = Array(data)
        }

        /// `PartitionSecret(<redacted>)`: never the secret.
        public var description: String { "PartitionSecret(\(Redaction.placeholder))" }
    }
}
