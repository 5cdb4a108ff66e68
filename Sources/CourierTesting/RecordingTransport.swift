public import Courier
public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Wraps any ``Transport`` and records every request it is sent and how each call ended. Safe to use
/// from many tasks at once.
///
/// ```swift
/// let recorder = RecordingTransport(wrapping: MockTransport.ok)
/// let client = Client(baseURL: base, transport: recorder)
/// _ = try await client.send(URLRequest(url: base))
/// #expect(recorder.requests.count == 1)
/// #expect(recorder.lastRequest?.header("Authorization") == nil)
/// ```
///
/// See ``RequestRecording`` for the reads it offers.
public final class RecordingTransport: Transport, RequestRecording {
    /// How a recorded call ended.
    public enum Outcome: Sendable {
        /// The call returned a response with this status.
        case response(status: Int)
        /// The call threw this error.
        case failure(any Error)
        /// The call was cancelled.
        case cancelled
    }

    /// One recorded call.
    public struct Exchange: Sendable {
        /// The request as the transport received it.
        public let request: URLRequest
        /// How the call ended, or `nil` while it is in flight.
        public var outcome: Outcome?
    }

    private let base: any Transport
    private let exchanges = LockedState<[Exchange]>([])

    /// Creates a recorder around `base`.
    ///
    /// - Parameter base: The transport that really answers.
    public init(wrapping base: any Transport) {
        self.base = base
    }

    /// Every request received, in the order they arrived.
    public var requests: [URLRequest] { exchanges.withLock { $0.map(\.request) } }

    /// Every call, in the order they arrived, with how each ended.
    public var calls: [Exchange] { exchanges.withLock { $0 } }

    /// How many calls are in flight now.
    public var inFlight: Int { exchanges.withLock { $0.count { $0.outcome == nil } } }

    /// Forgets what was recorded.
    public func reset() {
        exchanges.withLock { $0.removeAll() }
    }

    /// Records `request`, forwards it to the wrapped transport, and records the outcome.
    ///
    /// - Parameter request: The request.
    /// - Returns: The wrapped transport's response.
    /// - Throws: The wrapped transport's error, or `CourierError` (`.invalidRequest`) for a request that could
    ///   not be sent safely (it is not recorded).
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        // Like the real transports, refuse what could not be sent safely; such a request is not recorded.
        try RequestValidation.validate(request)
        let index = exchanges.withLock { exchanges in
            exchanges.append(Exchange(request: request, outcome: nil))
            return exchanges.count - 1
        }
        do {
            let result = try await base.send(request)
            record(.response(status: result.1.statusCode), at: index)
            return result
        } catch is CancellationError {
            record(.cancelled, at: index)
            throw CancellationError()
        } catch {
            record(.failure(error), at: index)
            throw error
        }
    }

    private func record(_ outcome: Outcome, at index: Int) {
        exchanges.withLock { exchanges in
            // `reset()` may have emptied the list while the call was in flight.
            if index < exchanges.count { exchanges[index].outcome = outcome }
        }
    }
}
