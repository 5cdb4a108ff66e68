import Foundation
import Testing

/// Every input committed for the fuzz targets (FuzzTesting/Corpora, the seeds, and FuzzTesting/Regressions, the
/// inputs that once crashed a parser or broke an invariant) through the same targets the fuzzer runs
/// (FuzzTargets.swift, shared with the FuzzTesting package), so that a crash found once is checked in every
/// `swift test`. A parser that traps stops the test process, which fails the run.
@Suite("Fuzz corpora: every committed fuzz input passes its target")
struct FuzzCorpusTests {
    /// FuzzTesting, from this file's path (Tests/CourierTests/Fuzzing/FuzzCorpusTests.swift).
    static let fuzzTesting = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("FuzzTesting")

    /// The files of `folder/target`, sorted; none when the folder does not exist.
    static func inputs(_ folder: String, _ target: String) -> [URL] {
        let directory = fuzzTesting.appendingPathComponent(folder).appendingPathComponent(target)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.sorted().map { directory.appendingPathComponent($0) }
    }

    /// The folders directly inside `folder`.
    static func folders(_ folder: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: fuzzTesting.appendingPathComponent(folder).path).sorted()
    }

    @Test("every target has a seed corpus, and every corpus and regression folder names a target")
    func foldersMatchTargets() throws {
        let names = FuzzTargets.all.map(\.name).sorted()
        #expect(try Self.folders("Corpora") == names)
        #expect(try Set(Self.folders("Regressions")).isSubset(of: names))
        for name in names { #expect(!Self.inputs("Corpora", name).isEmpty, "no seed for \(name)") }
    }

    @Test("every seed and regression input passes its target", arguments: FuzzTargets.all.map(\.name))
    func replay(target name: String) throws {
        let target = try #require(FuzzTargets.all.first { $0.name == name })
        for file in Self.inputs("Corpora", name) + Self.inputs("Regressions", name) {
            let bytes = try [UInt8](Data(contentsOf: file))
            #expect(throws: Never.self, "\(file.lastPathComponent)") { try target.run(bytes) }
        }
    }
}
