import Foundation

/// What the `StreamReader` child process reports of one streamed response: one line of JSON on its standard
/// output.
public struct StreamReport: Codable, Sendable {
    /// The response's status code.
    public var status: Int
    /// The body's bytes read.
    public var received: Int
    /// The chunks whose first or last byte is not the one ``TestServers/largeBodyByte(at:)`` puts there.
    public var misplaced: Int
    /// The `CourierError` code the body's loop threw, if it threw one.
    public var failure: String?
    /// That error's message.
    public var message: String?
    /// How much the child's peak resident memory grew from just before the call to the end of the body, in
    /// bytes.
    public var growth: Int

    /// A report of a body read to its end or to its failure.
    public init(status: Int, received: Int, misplaced: Int, failure: String?, message: String?, growth: Int) {
        self.status = status
        self.received = received
        self.misplaced = misplaced
        self.failure = failure
        self.message = message
        self.growth = growth
    }
}

/// This process's resident memory, from `/proc/self/status` (Linux).
public enum PeakMemory {
    /// Whether the process's memory can be read here.
    public static let isAvailable = FileManager.default.fileExists(atPath: "/proc/self/status")

    /// Resets the peak to the current resident size (where the kernel allows it) and returns that size, in bytes.
    public static func reset() -> Int {
        // "5" resets VmHWM to VmRSS (Linux 4.0 and later).
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
        return field("VmRSS")
    }

    /// The peak resident size since the last reset, in bytes.
    public static func peak() -> Int {
        field("VmHWM")
    }

    private static func field(_ name: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }),
            let kilobytes = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap({
                Int($0)
            })
        else { return 0 }
        return kilobytes * 1024
    }
}
