#if Tracing
public import Instrumentation

#if canImport(FoundationNetworking)
import Foundation
public import FoundationNetworking
#else
public import Foundation
#endif

/// Writes trace context into the headers of a `URLRequest`, for swift-distributed-tracing instruments
/// (trait `Tracing`).
///
/// ``Middleware/tracing(tracer:kind:)`` uses it; use it in your own middleware to propagate a context
/// yourself:
///
/// ```swift
/// var request = request
/// InstrumentationSystem.instrument.inject(context, into: &request, using: URLRequestHeaderInjector())
/// // with a W3C instrument, for example: traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
/// ```
///
/// A value is set with `setValue(_:forHTTPHeaderField:)`, so it replaces a header of the same name, and an
/// inner tracing layer's context wins over an outer one's.
public struct URLRequestHeaderInjector: Injector {
    /// Creates an injector.
    public init() {}

    /// Sets the header `key` of `request` to `value`.
    ///
    /// - Parameters:
    ///   - value: The header value, as the instrument formatted it.
    ///   - key: The header name, for example `traceparent`.
    ///   - request: The request that carries the header.
    public func inject(_ value: String, forKey key: String, into request: inout URLRequest) {
        request.setValue(value, forHTTPHeaderField: key)
    }
}
#endif
