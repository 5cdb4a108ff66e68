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

    var isEmpty: Bool { operations.isEmpty }

    func apply(to request: inout URLRequest) {
        for operation in operations {
            if operation.replaces {
                request.setValue(operation.value, forHTTPHeaderField: operation.name)
            } else {
                request.addValue(operation.value, forHTTPHeaderField: operation.name)
            }
        }
    }
}
