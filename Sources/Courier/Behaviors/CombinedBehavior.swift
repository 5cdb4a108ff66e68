public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Several ``RequestBehavior``s acting as one.
///
/// ```swift
/// let behavior = CombinedBehavior(RequestIDBehavior(), ActivityIndicator(activity: tracker))
/// // or: let behavior = [RequestIDBehavior(), ActivityIndicator(activity: tracker)].combined()
/// let client = Client(baseURL: base, middleware: [.behavior(behavior)])
/// ```
///
/// **Order**: installed with ``Middleware/behavior(_:)``, a combined behavior runs exactly like its
/// behaviors installed one after another, the first outermost:
/// - going out, in list order, each behavior's ``RequestBehavior/additionalHeaders`` are set and then
///   its ``RequestBehavior/beforeSend(_:)`` runs (so a later behavior sees, and may override, what an
///   earlier one did);
/// - coming back, in reverse order, each behavior's after-hook runs (the first behavior hears last);
/// - if a `beforeSend` throws, the behaviors after it do not run at all, and that behavior and those
///   before it get ``RequestBehavior/afterFailure(_:for:)`` (or ``RequestBehavior/afterCancellation(for:)``
///   for a `CancellationError`), in reverse order.
///
/// Nested combined behaviors are flattened. Used through the ``RequestBehavior`` requirements directly
/// (not installed), ``additionalHeaders`` merges the lists (later behaviors win), `beforeSend` runs in
/// order, and every after-hook runs in reverse order.
public struct CombinedBehavior: RequestBehavior {
    /// The behaviors, outermost first, with nested combined behaviors flattened.
    public let behaviors: [any RequestBehavior]

    /// Combines behaviors; the first is outermost.
    public init(_ behaviors: [any RequestBehavior]) {
        self.behaviors = behaviors.flatMap { behavior -> [any RequestBehavior] in
            if let combined = behavior as? CombinedBehavior { return combined.behaviors }
            return [behavior]
        }
    }

    /// Combines behaviors; the first is outermost.
    public init(_ behaviors: any RequestBehavior...) {
        self.init(behaviors)
    }

    /// Every behavior's headers, merged in order; a later behavior's field replaces an earlier one's.
    public var additionalHeaders: HTTPHeaders {
        var merged = HTTPHeaders()
        for behavior in behaviors {
            let headers = behavior.additionalHeaders
            for name in Set(headers.fields.map { $0.name.lowercased() }) {
                merged[name] = nil
            }
            for field in headers {
                merged.add(name: field.name, value: field.value)
            }
        }
        return merged
    }

    /// Runs every behavior's `beforeSend`, in order.
    ///
    /// - Throws: The first error a behavior throws; the behaviors after it do not run.
    public func beforeSend(_ request: inout URLRequest) async throws {
        for behavior in behaviors {
            try await behavior.beforeSend(&request)
        }
    }

    /// Runs every behavior's `afterSuccess`, in reverse order.
    public func afterSuccess(_ response: HTTPURLResponse, data: Data, for request: URLRequest) async {
        for behavior in behaviors.reversed() {
            await behavior.afterSuccess(response, data: data, for: request)
        }
    }

    /// Runs every behavior's `afterFailure`, in reverse order.
    public func afterFailure(_ error: any Error, for request: URLRequest) async {
        for behavior in behaviors.reversed() {
            await behavior.afterFailure(error, for: request)
        }
    }

    /// Runs every behavior's `afterCancellation`, in reverse order.
    public func afterCancellation(for request: URLRequest) async {
        for behavior in behaviors.reversed() {
            await behavior.afterCancellation(for: request)
        }
    }
}

extension Array where Element == any RequestBehavior {
    /// Combines the behaviors into one; the first is outermost. See ``CombinedBehavior`` for the order.
    public func combined() -> CombinedBehavior {
        CombinedBehavior(self)
    }
}
