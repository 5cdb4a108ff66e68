import Courier
public import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One step of a scripted streamed body: bytes, a pause, a hold, or the connection dropping.
///
/// ```swift
/// let clock = ManualClock()
/// let mock = MockTransport {
///     MockRoute.get("/events").replies(
///         .events([
///             .event("hello", id: "1"),
///             .delay(.seconds(5), on: clock),
///             .event("world", id: "2"),
///             .drop(),                                  // the connection is lost here
///         ])
///     )
/// }
/// ```
///
/// A streamed answer's head is returned at once; its steps run as the caller reads the body, so a `.delay` on a
/// ``ManualClock`` holds the reader until the test advances the clock.
public struct MockChunk: Sendable {
    enum Step: Sendable {
        case bytes(Data)
        case wait(@Sendable () async throws -> Void)
        case fail(any Error)
    }

    let step: Step

    /// These bytes, as one chunk.
    public static func data(_ data: Data) -> MockChunk {
        MockChunk(step: .bytes(data))
    }

    /// UTF-8 text, as one chunk.
    public static func text(_ text: String) -> MockChunk {
        .data(Data(text.utf8))
    }

    /// One Server-Sent Event on the wire (`event:`, `id:`, `retry:` and a `data:` line per line of `data`,
    /// then a blank line), as one chunk.
    ///
    /// - Parameters:
    ///   - data: The event's data; each of its lines becomes a `data:` line.
    ///   - type: The `event:` field, or `nil` for the default type (`message`).
    ///   - id: The `id:` field, or `nil` for none.
    ///   - retry: The `retry:` field (the reconnection delay), or `nil` for none.
    public static func event(
        _ data: String,
        type: String? = nil,
        id: String? = nil,
        retry: Duration? = nil
    ) -> MockChunk {
        var wire = ""
        if let type { wire += "event: \(type)\n" }
        if let id { wire += "id: \(id)\n" }
        if let retry {
            let (seconds, attoseconds) = retry.components
            wire += "retry: \(seconds * 1_000 + attoseconds / 1_000_000_000_000_000)\n"
        }
        for line in data.split(separator: "\n", omittingEmptySubsequences: false) {
            wire += "data: \(line)\n"
        }
        return .text(wire + "\n")
    }

    /// A pause of `duration` on `clock` before the next step.
    public static func delay(_ duration: Duration, on clock: some Clock<Duration> = ContinuousClock()) -> MockChunk {
        MockChunk(step: .wait { try await clock.sleep(for: duration) })
    }

    /// Holds the body until `gate` opens, counting the hold in `arrivals` (if given) when it begins.
    public static func hold(until gate: Gate, counting arrivals: Arrivals? = nil) -> MockChunk {
        MockChunk(
            step: .wait {
                arrivals?.arrive()
                try await gate.waitUnlessCancelled()
            }
        )
    }

    /// The connection drops here: reading the body throws `error` (by default
    /// `URLError(.networkConnectionLost)`, what URLSession reports).
    public static func drop(_ error: any Error = URLError(.networkConnectionLost)) -> MockChunk {
        MockChunk(step: .fail(error))
    }
}

/// The chunks of a scripted body, produced step by step as they are read.
struct ScriptedBody: AsyncSequence, Sendable {
    typealias Element = Data

    let steps: [MockChunk]

    func makeAsyncIterator() -> Iterator {
        Iterator(steps: steps[...])
    }

    struct Iterator: AsyncIteratorProtocol {
        var steps: ArraySlice<MockChunk>

        mutating func next() async throws -> Data? {
            while let step = steps.popFirst() {
                switch step.step {
                case .bytes(let data):
                    return data
                case .wait(let wait):
                    try await wait()
                case .fail(let error):
                    steps = []
                    throw error
                }
            }
            return nil
        }
    }

    /// The whole body, for a call that does not stream: every step runs, and a drop is thrown.
    func collect() async throws -> Data {
        var data = Data()
        for try await chunk in self { data.append(chunk) }
        return data
    }
}
