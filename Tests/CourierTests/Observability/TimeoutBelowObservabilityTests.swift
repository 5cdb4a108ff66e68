import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Counting, logging and timing placed below a timeout hear its expiry as a failure (`timedOut`), as they do
/// above it or when the transport enforces the deadline: only a caller that went away is a cancellation.
@Suite("Observing layers below a timeout", .timeLimit(.minutes(1)))
struct TimeoutBelowObservabilityTests {
    @Test(
        "a timeout above counting, logging and timing is a failure to each of them, and a caller's cancellation is not"
    )
    func timeoutIsAFailureBelow() async throws {
        for callerCancels in [false, true] {
            let clock = ManualClock()
            let arrived = Arrivals()
            let counter = RequestCounter()
            let records = Locked<[LogRecord]>([])
            let outcomes = Locked<[String]>([])
            let client = makeClient(
                MockTransport.hanging(counting: arrived),
                [
                    .timeout(.seconds(1), clock: clock), .counting(counter),
                    .logging(to: LogSink { record in records.withLock { $0.append(record) } }),
                    .timing(clock: clock) { _, outcome, _ in
                        let text =
                            switch outcome {
                            case .success: "success"
                            case .failure(let error):
                                "failure(\((error as? CourierError)?.code.description ?? "other"))"
                            case .cancelled: "cancelled"
                            }
                        outcomes.withLock { $0.append(text) }
                    },
                ]
            )
            let call = Task { try await client.send(URLRequest(url: testURL)) }
            await arrived.wait(for: 1)
            if callerCancels { call.cancel() } else { clock.advance(by: .seconds(1)) }
            _ = await call.result
            let snapshot = counter.snapshot
            #expect(snapshot.failed == (callerCancels ? 0 : 1), "caller cancels: \(callerCancels)")
            #expect(snapshot.cancelled == (callerCancels ? 1 : 0), "caller cancels: \(callerCancels)")
            #expect(snapshot.inFlight == 0)
            #expect(records.value.map(\.event) == [callerCancels ? .cancelled : .failed])
            #expect(outcomes.value == [callerCancels ? "cancelled" : "failure(timedOut)"])
        }
    }
}
