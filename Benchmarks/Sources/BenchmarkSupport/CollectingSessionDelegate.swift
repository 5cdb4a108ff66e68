public import Foundation
import Synchronization

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// The least a `URLSession` caller writes to receive a body through a delegate instead of a completion
/// handler: it appends each chunk and resumes the caller when the task completes. It has no size limit, no
/// redirect or challenge handling and no cancellation, so that a comparison with it measures what the
/// delegate path itself costs (FoundationNetworking queues an operation on the delegate queue for the head,
/// for each chunk and for the completion, where a completion handler's task queues one).
///
/// `URLSessionTransport` collects bodies this way so that it can refuse one larger than its limit while it
/// arrives; the benchmarks compare it with this delegate to separate its own cost from the mechanism's.
public final class CollectingSessionDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private struct Pending {
        var continuation: CheckedContinuation<(Data, URLResponse), any Error>
        var body = Data()
    }

    private let pending = Mutex<[Int: Pending]>([:])

    /// Gets `request` with `session`, whose delegate must be `self`.
    public func data(for request: URLRequest, on session: URLSession) async throws -> (Data, URLResponse) {
        try await withCheckedThrowingContinuation { continuation in
            let task = session.dataTask(with: request)
            pending.withLock { $0[task.taskIdentifier] = Pending(continuation: continuation) }
            task.resume()
        }
    }

    /// Appends a chunk of the task's body.
    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        pending.withLock { $0[dataTask.taskIdentifier]?.body.append(data) }
    }

    /// Resumes the task's caller with the body and the response, or the error.
    public func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let done = pending.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let error {
            done.continuation.resume(throwing: error)
        } else if let response = task.response {
            done.continuation.resume(returning: (done.body, response))
        } else {
            done.continuation.resume(throwing: URLError(.badServerResponse))
        }
    }
}
