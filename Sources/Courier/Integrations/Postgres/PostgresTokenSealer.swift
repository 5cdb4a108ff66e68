#if Postgres
import Crypto
import Foundation

/// Seals and opens the secrets of a ``PostgresSharedTokenStore`` row with AES-256-GCM: seals with the current key,
/// opens with it or with one of the previous ones (a key being rotated out).
///
/// A sealed value is a format byte (1), the 12-byte random nonce, the ciphertext and the 16-byte tag. Where it
/// belongs (the table, the token's name, the column, the row's version: ``Place``) is bound into it as
/// associated data, so a value copied to another row, name, column or version, or altered in any bit, does not
/// open.
struct PostgresTokenSealer: Sendable {
    /// Which secret of the row a value is: the column it is stored in.
    enum Column: String, Sendable {
        case value = "sealed_value"
        case refreshToken = "sealed_refresh_token"
    }

    /// Where a sealed value belongs.
    struct Place: Sendable, CustomStringConvertible {
        /// The table, schema-qualified as the database resolves it (however the store's caller spelled it).
        var table: String
        /// The token's name: the row.
        var name: String
        var column: Column
        /// The version of the token the value is part of.
        var version: Int

        var description: String { "\(column.rawValue) of \(name) v\(version) in \(table)" }

        /// The associated data: a label, then each field length-prefixed, so no two places share it.
        var associatedData: Data {
            var data = Data("courier.shared-token.1".utf8)
            for field in [table, name, column.rawValue, String(version)] {
                let bytes = Array(field.utf8)
                withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { data.append(contentsOf: $0) }
                data.append(contentsOf: bytes)
            }
            return data
        }
    }

    /// The first byte of every sealed value: which layout and algorithm follow.
    static let format: UInt8 = 1

    private let current: SymmetricKey
    private let previous: [SymmetricKey]

    init(current: PostgresSharedTokenStore.SealingKey, previous: [PostgresSharedTokenStore.SealingKey]) {
        self.current = current.key
        self.previous = previous.map(\.key)
    }

    /// `secret` sealed with the current key for `place`.
    func seal(_ secret: String, at place: Place) throws(CourierError) -> Data {
        let box: AES.GCM.SealedBox
        do {
            box = try AES.GCM.seal(Data(secret.utf8), using: current, authenticating: place.associatedData)
        } catch {
            throw CourierError(.encodingFailed, message: "could not seal the \(place)", underlying: error)
        }
        // Always there with the default 12-byte nonce.
        guard let combined = box.combined else {
            throw CourierError(.encodingFailed, message: "could not seal the \(place): no combined form")
        }
        return Data([Self.format]) + combined
    }

    /// The secret `sealed` holds, opened with the current key or a previous one.
    ///
    /// - Throws: ``CourierError/Code/decodingFailed`` when no key opens it for `place`: sealed with another key,
    ///   for another place, or altered.
    func open(_ sealed: Data, at place: Place) throws(CourierError) -> String {
        if sealed.first == Self.format, let box = try? AES.GCM.SealedBox(combined: Data(sealed.dropFirst())) {
            let associatedData = place.associatedData
            for key in CollectionOfOne(current) + previous {
                if let opened = try? AES.GCM.open(box, using: key, authenticating: associatedData),
                    let secret = String(data: opened, encoding: .utf8)
                {
                    return secret
                }
            }
        }
        throw CourierError(
            .decodingFailed,
            message: """
                the \(place) does not open with this store's sealing keys: it was sealed with another key, \
                belongs to another row, column or version, or was altered
                """
        )
    }
}

extension PostgresTokenSealer: CustomReflectable {
    /// The keys show as `<redacted>`: `dump(store)` or a debugger never shows them.
    var customMirror: Mirror { Mirror(self, children: ["keys": Redaction.placeholder], displayStyle: .struct) }
}
#endif
