import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Header fields checked once and applied to requests: the first field of a name replaces whatever the
/// request has under that name, and further fields of the same name are added after it.
struct HeaderPatch: Sendable {
    private struct Operation: Sendable {
        let name: String
        let value: String
        let replaces: Bool
    }

    private let operations: [Operation]

    /// Checks `headers` (names must be RFC 9110 tokens; values must not contain CR, LF or NUL).
    ///
    /// - Throws: ``CourierError/Code/invalidRequest`` for the first bad field; its message never contains
    ///   the value.
    init(_ headers: HTTPHeaders, request: URLRequest? = nil) throws {
        var seen: Set<String> = []
        var operations: [Operation] = []
        operations.reserveCapacity(headers.fields.count)
        for field in headers {
            try RequestValidation.validateHeader(name: field.name, value: field.value, request: request)
            let replaces = seen.insert(field.name.lowercased()).inserted
            operations.append(Operation(name: field.name, value: field.value, replaces: replaces))
        }
        self.operations = operations
    }

    private init(operations: [Operation]) {
        self.operations = operations
    }

    var isEmpty: Bool { operations.isEmpty }

    /// The fields' values, in order.
    var values: [String] { operations.map(\.value) }

    /// The fields whose names are not credential headers (``CredentialHeaders/contains(_:)``), and those that
    /// are. Every field of a name goes to the same side, so each side replaces and adds as the whole did.
    /// Whether a field of the patch is a credential header (``CredentialHeaders/contains(_:)``).
    var containsCredential: Bool { operations.contains { CredentialHeaders.contains($0.name) } }

    func separatingCredentials() -> (plain: HeaderPatch, credentials: HeaderPatch) {
        let isCredential = operations.map { CredentialHeaders.contains($0.name) }
        return (
            HeaderPatch(operations: zip(operations, isCredential).filter { !$0.1 }.map(\.0)),
            HeaderPatch(operations: zip(operations, isCredential).filter { $0.1 }.map(\.0))
        )
    }

    func apply(to request: inout URLRequest) {
        for operation in operations {
            if operation.replaces {
                request.setValue(operation.value, forHTTPHeaderField: operation.name)
            } else {
                HeaderFieldJoining.add(operation.value, to: operation.name, in: &request)
            }
        }
    }
}
