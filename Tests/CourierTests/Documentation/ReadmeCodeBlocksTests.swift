import Foundation
import Testing

/// The code a newcomer copies first compiles: every Swift block of the README, CONTRIBUTING.md and the Getting
/// started article, and every manifest block of those and of the OpenAPI article. A file's code blocks are
/// one program, in order (as a reader follows them); a manifest block is checked against SwiftPM's
/// `PackageDescription`.
@Suite(
    "The code blocks of the README, CONTRIBUTING.md and the Getting started article compile",
    .enabled(if: CompilerCheck.isAvailable, "swiftc and the built modules are needed (a default build)"),
    .timeLimit(.minutes(2))
)
struct ReadmeCodeBlocksTests {
    /// The files whose Swift blocks must compile as one program each.
    static let programs = ["README.md", "CONTRIBUTING.md", "Sources/Courier/Documentation.docc/GettingStarted.md"]

    /// The files whose manifest blocks must compile.
    static let manifests = programs + ["Sources/Courier/Documentation.docc/OpenAPI.md"]

    /// What the blocks use but leave to the reader: a token kept from the last run, and the call that gets a
    /// new one.
    static let prelude = """
        let storedToken = "stored-token-0123456789"
        func signIn() async throws -> TokenRefresher.Token { .init("new-token-0123456789", expiresIn: .seconds(3600)) }
        """

    /// The ```swift blocks of `text`, in order.
    static func swiftBlocks(in text: String) -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```swift" {
                current = []
            } else if current != nil, line == "```" {
                blocks.append(current!.joined(separator: "\n"))
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    /// Whether a block is a piece of a `Package.swift`.
    static func isManifest(_ block: String) -> Bool {
        block.contains(".package(url:")
    }

    static func text(_ path: String) throws -> String {
        try String(contentsOf: packageRoot.appendingPathComponent(path), encoding: .utf8)
    }

    /// The compiler's output for a manifest block, put in a `Package(name:…)` as it would be in a manifest.
    static func typecheckManifest(_ block: String) async throws -> String {
        guard let swiftc = CompilerCheck.swiftc else { throw CocoaError(.fileNoSuchFile) }
        // The toolchain's PackageDescription module: <toolchain>/usr/lib/swift/pm/ManifestAPI.
        let api = swiftc.resolvingSymlinksInPath().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("lib/swift/pm/ManifestAPI")
        let body =
            block.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix(".package(")
            ? "dependencies: [\n\(block)\n]" : block
        let source = "import PackageDescription\nlet package = Package(\nname: \"MyService\",\n\(body)\n)\n"
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-manifest-\(UUID()).swift")
        try source.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let arguments = [
            "-typecheck", "-I", api.path, "-L", api.path, "-package-description-version", "6.1", file.path,
        ]
        return try await ChildProcess.run(swiftc, arguments).text
    }

    @Test("each file's Swift blocks compile as one program, in order", arguments: programs)
    func swiftBlocksCompile(path: String) async throws {
        let blocks = Self.swiftBlocks(in: try Self.text(path)).filter { !Self.isManifest($0) }
        // CONTRIBUTING.md has commands only; should it gain Swift, this test compiles it.
        if path == "CONTRIBUTING.md" && blocks.isEmpty { return }
        #expect(blocks.count >= 2, "\(path) has \(blocks.count) Swift blocks")
        let output = try await CompilerCheck.typecheck(Self.prelude + "\n" + blocks.joined(separator: "\n"))
        #expect(!output.contains("error:"), "\(path):\n\(output)")
    }

    @Test("each manifest block compiles against PackageDescription", arguments: manifests)
    func manifestBlocksCompile(path: String) async throws {
        let blocks = Self.swiftBlocks(in: try Self.text(path)).filter(Self.isManifest)
        if path == "CONTRIBUTING.md" && blocks.isEmpty { return }
        #expect(!blocks.isEmpty, "\(path) shows no manifest")
        for block in blocks {
            let output = try await Self.typecheckManifest(block)
            #expect(!output.contains("error:"), "\(path):\n\(block)\n\(output)")
        }
    }

    @Test("the checks fail on a block that does not compile")
    func checksCanFail() async throws {
        let code = try await CompilerCheck.typecheck(Self.prelude + "\nlet client = Client(baseURL: 42)")
        #expect(code.contains("error:"))
        let manifest = try await Self.typecheckManifest(
            ".package(url: \"https://example.com/x.git\", fromm: \"1.0.0\"),"
        )
        #expect(manifest.contains("error:"))
        #expect(Self.swiftBlocks(in: "a\n```swift\nlet a = 1\n```\n```sh\nls\n```\n") == ["let a = 1"])
    }
}
