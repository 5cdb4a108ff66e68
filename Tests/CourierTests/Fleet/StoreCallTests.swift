import CourierTesting
import Foundation
import Testing

@testable import Courier

@Suite("A bounded store call", .timeLimit(.minutes(1)))
struct StoreCallTests {
    @Test("A caller cancelled just before the timer is armed leaves the operation bounded: cancelled at its limit")
    func callerCancelledBeforeArming() async throws {
        let operationCancelled = Gate()
        let limitReached = Gate()
        let call = Task {
            try await StoreCall.$beforeArming.withValue({ withUnsafeCurrentTask { $0?.cancel() } }) {
                try await StoreCall.bounded(
                    "write",
                    limit: .seconds(1),
                    sleep: { _ in
                        // The limit is reached at once, unless the timer was cancelled.
                        try Task.checkCancellation()
                        limitReached.open()
                    }
                ) {
                    // A write that answers only when cancelled (a connection stuck on a dead peer).
                    await withTaskCancellationHandler {
                        await operationCancelled.wait()
                    } onCancel: {
                        operationCancelled.open()
                    }
                }
            }
        }
        await #expect(throws: CancellationError.self) { try await call.join() }
        // The limit still ends the operation.
        try await limitReached.waitUnlessCancelled()
        try await operationCancelled.waitUnlessCancelled()
    }
}
