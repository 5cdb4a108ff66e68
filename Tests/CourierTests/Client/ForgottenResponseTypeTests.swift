import Foundation
import Testing

/// `client.send(.get("/x"))` without a response type must not compile, and the compiler's error must say how
/// to write it. Checked by type-checking a small file against the Courier module this test bundle was built
/// with (`swiftc -typecheck`, about a tenth of a second); skipped where no compiler or module is found, and
/// in builds with a package trait on.
@Suite("A forgotten response type", .enabled(if: CompilerCheck.isAvailable), .timeLimit(.minutes(1)))
struct ForgottenResponseTypeTests {
    @Test("send without a response type is a compile error that shows how to write one")
    func send() async throws {
        let output = try await CompilerCheck.typecheck(
            """
            func f(client: Client) async throws {
                let user = try await client.send(.get("/x"))
                _ = user
            }
            """
        )
        #expect(output.contains("error: 'send' is unavailable: write the response type"))
        #expect(output.contains("let user: User = try await client.send(.get(…))"))
        #expect(!output.contains("has no member 'get'"))
    }

    @Test("response(for:) without a response type is a compile error that shows how to write one")
    func response() async throws {
        let output = try await CompilerCheck.typecheck(
            """
            func f(client: Client) async throws {
                let (user, response) = try await client.response(for: .get("/x"))
                _ = (user, response)
            }
            """
        )
        #expect(output.contains("error: 'response(for:)' is unavailable: write the response type"))
    }

    @Test("with the response type written, every send still compiles, the URLRequest one too")
    func typedCallsCompile() async throws {
        let output = try await CompilerCheck.typecheck(
            """
            struct User: Decodable, Sendable {}
            func f(client: Client, request: URLRequest) async throws {
                let user: User = try await client.send(.get("/x"))
                let _: EmptyResponse = try await client.send(.delete("/x"))
                let (again, response) = try await client.response(for: Request<User>.get("/x"))
                let (data, raw) = try await client.send(request)
                _ = (user, again, response, data, raw)
            }
            func g<T: Decodable & Sendable>(client: Client) async throws -> T { try await client.send(.get("/x")) }
            """
        )
        #expect(!output.contains("error:"), "\(output)")
    }
}

/// Runs `swiftc -typecheck` on a snippet that imports Courier, against the modules next to this test bundle.
enum CompilerCheck {
    /// The directory holding `Courier.swiftmodule`.
    static var modules: URL? { BuildProducts.directory?.appendingPathComponent("Modules") }

    static let swiftc: URL? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"
        return path.split(separator: ":").map { URL(fileURLWithPath: String($0)).appendingPathComponent("swiftc") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()

    /// Whether the check can run: in a default build (with a trait on, Courier imports packages whose C
    /// modules `swiftc` would have to be pointed at one by one; what is checked does not depend on traits).
    static var isAvailable: Bool {
        #if AsyncHTTPClient || Logging || Metrics || Tracing
        return false
        #else
        return modules != nil && swiftc != nil
        #endif
    }

    /// The compiler's output for `body`, with `import Courier`, `import Foundation` and (unless told not to)
    /// `import FoundationNetworking` above it.
    static func typecheck(_ body: String, importingFoundationNetworking: Bool = true) async throws -> String {
        guard let modules, let swiftc else { throw CocoaError(.fileNoSuchFile) }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-typecheck-\(UUID()).swift")
        let networking =
            importingFoundationNetworking
            ? "#if canImport(FoundationNetworking)\nimport FoundationNetworking\n#endif" : ""
        let source = "import Courier\nimport Foundation\n\(networking)\n\(body)\n"
        try source.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let arguments = ["-typecheck", "-swift-version", "6", "-I", modules.path, file.path]
        return try await ChildProcess.run(swiftc, arguments).text
    }
}
