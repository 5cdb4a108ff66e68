import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The file promises of ``Client/download(_:to:resumable:resumeAttempts:idleTimeout:progressInterval:clock:progress:)``, checked over seeded random
/// servers: two versions of a resource, answers that are whole (`200`, with a strong, weak or no `ETag`, a strong
/// `Last-Modified` or none), partial (`206` of the same or the other version, with a strong, weak or no `ETag`, the
/// right or a wrong `Content-Range` start, the right, another, an unknown or a 23-digit complete length), empty
/// (`204`), unsatisfiable (`416`) or failed (`500`), any of them cut mid-body, across up to three resumptions.
///
/// After every case: the destination is either exactly as it was (absent, or the previous file) or holds exactly
/// one version's bytes, whole; nothing but the destination is left in its directory (no temporary file) and
/// nothing was written beside that directory; the number of requests stays within `1 + 2 × resumeAttempts`.
/// A failure prints the case's seed: `COURIER_DOWNLOAD_SEED=<seed> swift test --filter DownloadModelTests`
/// replays it alone.
@Suite("Client.download (seeded, model-based)", .timeLimit(.minutes(3)))
struct DownloadModelTests {
    static var seeds: [UInt64] {
        if let seed = ProcessInfo.processInfo.environment["COURIER_DOWNLOAD_SEED"].flatMap(UInt64.init) {
            return [seed]
        }
        let count = ProcessInfo.processInfo.environment["COURIER_DOWNLOAD_CASES"].flatMap(Int.init) ?? 400
        return (0..<UInt64(count)).map { 0xD0_3A1D &+ $0 }
    }

    @Test("a download leaves the destination as it was or holding one whole version, and nothing else behind")
    func invariantsHold() async throws {
        var failures: [String] = []
        for seed in Self.seeds {
            let problems = try await Self.run(DownloadCase(seed: seed))
            failures += problems.map { "seed \(seed): \($0)" }
            if failures.count > 20 { break }
        }
        #expect(
            failures.isEmpty,
            "\(failures.count) violations; the first:\n\(failures.prefix(5).joined(separator: "\n"))"
        )
    }

    /// Runs one case in a directory of its own, inside a container that must hold nothing else afterwards.
    static func run(_ scenario: DownloadCase) async throws -> [String] {
        let container = FileManager.default.temporaryDirectory
            .appendingPathComponent("courier-download-model-\(UUID().uuidString)")
        let directory = container.appendingPathComponent("d")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: container) }
        let destination = directory.appendingPathComponent("file.bin")
        if let previous = scenario.previous { try previous.write(to: destination) }

        let mock = MockTransport { MockRoute.get("/file").replies(.handler { scenario.answer(to: $0) }) }
        let client = Client(baseURL: URL(string: "http://127.0.0.1")!, transport: mock)
        let outcome: Result<HTTPURLResponse, any Error>
        do {
            outcome = .success(
                try await client.download(.get("/file"), to: destination, resumeAttempts: scenario.resumeAttempts)
            )
        } catch {
            outcome = .failure(error)
        }

        var problems: [String] = []
        let context = "\(scenario)\n    requests: \(mock.requests.map { $0.value(forHTTPHeaderField: "Range") ?? "-" })"
        let written = FileManager.default.contents(atPath: destination.path)
        switch outcome {
        case .success:
            if let written, !scenario.versions.contains(written) {
                let prefix = scenario.versions.map { version in
                    zip(version, written).prefix { $0 == $1 }.count
                }
                problems.append(
                    "the file is no version's bytes (\(written.count) bytes; common prefix with each: \(prefix))\(context)"
                )
            } else if written == nil {
                problems.append("the download succeeded but there is no file\(context)")
            }
        case .failure(let error):
            if written != scenario.previous {
                problems.append(
                    "the download failed (\(error)) but the destination changed: \(written?.count ?? -1) bytes\(context)"
                )
            }
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? ["?"]
        if names != (written == nil ? [] : ["file.bin"]) {
            problems.append("the directory holds \(names)\(context)")
        }
        let beside = (try? FileManager.default.contentsOfDirectory(atPath: container.path)) ?? ["?"]
        if beside != ["d"] { problems.append("beside the directory: \(beside)\(context)") }
        if mock.requests.count > 1 + 2 * scenario.resumeAttempts {
            problems.append("\(mock.requests.count) requests for \(scenario.resumeAttempts) resumptions\(context)")
        }
        return problems
    }
}

/// One random server and starting state, made from a seed.
struct DownloadCase: CustomStringConvertible, Sendable {
    /// What the server answers to one request.
    struct Answer: CustomStringConvertible, Sendable {
        enum Kind: Sendable {
            case whole
            case partial(startShift: Int64, total: Total)
            case status(Int)
        }

        enum Tag: Sendable { case strong, weak, none }
        enum Total: Sendable { case right, other, unknown, huge }

        var kind: Kind
        /// The version served (0 or 1).
        var version: Int
        var tag: Tag
        var lastModified: Bool
        var contentLength: Bool
        /// Where the body is cut, as a fraction of its length; `nil` for a whole body.
        var cut: Double?

        var description: String {
            let what =
                switch kind {
                case .whole: "200"
                case .partial(let shift, let total): "206(shift \(shift), total \(total))"
                case .status(let status): "\(status)"
                }
            return "\(what) v\(version + 1) tag:\(tag)\(lastModified ? " lm" : "")"
                + "\(contentLength ? " cl" : "")\(cut.map { " cut@\(Int($0 * 100))%" } ?? "")"
        }
    }

    let seed: UInt64
    let versions: [Data]
    let previous: Data?
    let resumeAttempts: Int
    /// The answers to requests without a `Range`, and to those with one, by the request's place in the call.
    let wholeAnswers: [Answer]
    let rangeAnswers: [Answer]

    init(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        self.seed = seed
        let lengths: [Int] = [0, 1, 999, 1_000, 2_500, 3_000]
        versions = (0..<2).map { version in
            let length = lengths.randomElement(using: &random)!
            // Versions differ at every offset (by 50, modulo 251).
            return Data((0..<length).map { UInt8(($0 * 7 + version * 50) % 251) })
        }
        previous = random.nextUnitInterval() < 0.5 ? nil : Data("previous \(seed)".utf8)
        resumeAttempts = Int.random(in: 0...3, using: &random)
        let requests = 1 + 2 * 3
        wholeAnswers = (0..<requests).map { index in
            var answer = Self.randomAnswer(&random, partial: false)
            if index == 0, random.nextUnitInterval() < 0.8 { answer.kind = .whole }
            return answer
        }
        rangeAnswers = (0..<requests).map { _ in Self.randomAnswer(&random, partial: true) }
    }

    private static func randomAnswer(_ random: inout SplitMix64, partial: Bool) -> Answer {
        let roll = random.nextUnitInterval()
        let kind: Answer.Kind
        if partial && roll < 0.6 {
            let shift: Int64 = random.nextUnitInterval() < 0.8 ? 0 : [-1, 1].randomElement(using: &random)!
            let totals: [Answer.Total] = [.right, .right, .right, .right, .right, .other, .unknown, .huge]
            kind = .partial(startShift: shift, total: totals.randomElement(using: &random)!)
        } else if roll < 0.8 {
            kind = .whole
        } else {
            kind = .status([204, 416, 500, 205].randomElement(using: &random)!)
        }
        let tags: [Answer.Tag] = [.strong, .strong, .strong, .weak, .none]
        return Answer(
            kind: kind,
            version: random.nextUnitInterval() < 0.6 ? 0 : 1,
            tag: tags.randomElement(using: &random)!,
            lastModified: random.nextUnitInterval() < 0.4,
            contentLength: random.nextUnitInterval() < 0.8,
            cut: random.nextUnitInterval() < 0.4 ? random.nextUnitInterval() : nil
        )
    }

    var description: String {
        "\n    versions: \(versions.map(\.count)) bytes, previous: \(previous?.count ?? -1), resumes: \(resumeAttempts)"
            + "\n    whole: \(wholeAnswers)\n    range: \(rangeAnswers)"
    }

    /// The server: answers the request by its place in the call and whether it asks for a range.
    func answer(to request: MockRequest) -> MockResponse {
        let index = min(request.callIndex, wholeAnswers.count - 1)
        let range = request.header("Range")
        let answer = range == nil ? wholeAnswers[index] : rangeAnswers[index]
        let data = versions[answer.version]
        var headers: [String: String] = [:]
        switch answer.tag {
        case .strong: headers["ETag"] = "\"v\(answer.version + 1)\""
        case .weak: headers["ETag"] = "W/\"v\(answer.version + 1)\""
        case .none: break
        }
        if answer.lastModified {
            headers["Last-Modified"] = "Tue, 24 Nov 2026 0\(answer.version + 1):00:00 GMT"
            headers["Date"] = "Tue, 24 Nov 2026 05:00:00 GMT"
        }
        let body: Data
        let status: Int
        switch answer.kind {
        case .whole:
            (status, body) = (200, data)
        case .partial(let shift, let total):
            // The start the request asked for, or one byte off; a start past the end is a 416.
            let asked = range.flatMap { Int64($0.dropFirst("bytes=".count).dropLast()) } ?? 0
            let start = max(0, asked + shift)
            guard start < data.count else {
                return .status(416, headers: ["Content-Range": "bytes */\(data.count)"])
            }
            let complete =
                switch total {
                case .right: "\(data.count)"
                case .other: "\(data.count + 1)"
                case .unknown: "*"
                case .huge: "99999999999999999999999"
                }
            headers["Content-Range"] = "bytes \(start)-\(data.count - 1)/\(complete)"
            (status, body) = (206, data.dropFirst(Int(start)))
        case .status(let code):
            return .stream([], status: code, headers: headers)
        }
        if answer.contentLength { headers["Content-Length"] = "\(body.count)" }
        var chunks: [MockChunk] = stride(from: 0, to: body.count, by: 700).map { offset in
            .data(body.dropFirst(offset).prefix(700))
        }
        if let cut = answer.cut {
            let keep = Int(Double(body.count) * cut)
            chunks = [.data(body.prefix(keep)), .drop()]
        }
        return .stream(chunks, status: status, headers: headers)
    }
}
