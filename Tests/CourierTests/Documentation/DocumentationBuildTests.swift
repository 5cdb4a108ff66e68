import Foundation
import Testing

/// The DocC documentation: the snippets its articles show (each named by its path too, for a reader of the
/// Markdown), the one command that builds it (CONTRIBUTING.md's, which CI runs), the landing page's reading
/// order, and the Integrations article that curates what each package trait adds. CI's documentation step
/// checks the rest: every link resolves and every snippet renders, or the build fails.
@Suite("The DocC documentation")
struct DocumentationBuildTests {
    static let catalogs = ["Sources/Courier/Documentation.docc", "Sources/CourierTesting/Documentation.docc"]

    static func text(_ path: String) throws -> String {
        try String(contentsOf: packageRoot.appendingPathComponent(path), encoding: .utf8)
    }

    /// Every Markdown file of both catalogs, by path from the package root.
    static func articles() throws -> [(path: String, text: String)] {
        try catalogs.flatMap { catalog in
            try FileManager.default.contentsOfDirectory(atPath: packageRoot.appendingPathComponent(catalog).path)
                .filter { $0.hasSuffix(".md") }
                .sorted()
                .map { (path: "\(catalog)/\($0)", text: try text("\(catalog)/\($0)")) }
        }
    }

    /// The values of `key: "…"` in `text`, in order.
    static func quoted(after key: String, in text: String) -> [String] {
        text.components(separatedBy: key + "\"").dropFirst().compactMap { $0.split(separator: "\"").first }
            .map(String.init)
    }

    @Test("every @Snippet in an article names a file in this package's Snippets/")
    func snippetReferences() throws {
        let manifest = try Self.text("Package.swift")
        let package = try #require(manifest.firstMatch(of: /Package\(\s*name: "([^"]+)"/)).1
        var references = 0
        for (path, text) in try Self.articles() {
            for reference in Self.quoted(after: "@Snippet(path: ", in: text) {
                references += 1
                // `courier/Snippets/QuickTour` is Snippets/QuickTour.swift of the package named `courier`.
                let parts = reference.split(separator: "/", maxSplits: 2).map(String.init)
                let file = packageRoot.appendingPathComponent("Snippets/\(parts.last ?? "").swift").path
                #expect(
                    parts.count == 3 && parts[0] == String(package) && parts[1] == "Snippets"
                        && FileManager.default.fileExists(atPath: file),
                    "\(path) shows the snippet \(reference), which is not a file in Snippets/ of '\(package)'"
                )
            }
        }
        #expect(references >= 8, "the articles show \(references) snippets")
    }

    /// The `@Snippet` lines of `text` whose file is not named by path (`Snippets/Name.swift`) in the paragraph
    /// just before them, so that a reader of the plain Markdown sees nothing where the code should be.
    static func unnamedSnippets(in text: String) -> [String] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var unnamed: [String] = []
        for (index, line) in lines.enumerated() {
            guard let reference = quoted(after: "@Snippet(path: ", in: line).first else { continue }
            // The paragraph before: the lines above, back to the blank line that starts it.
            var start = index - 1
            while start >= 0, lines[start].trimmingCharacters(in: .whitespaces).isEmpty { start -= 1 }
            var paragraph: [String] = []
            while start >= 0, !lines[start].trimmingCharacters(in: .whitespaces).isEmpty {
                paragraph.insert(lines[start], at: 0)
                start -= 1
            }
            let name = reference.split(separator: "/").last.map(String.init) ?? reference
            if !paragraph.joined(separator: " ").contains("`Snippets/\(name).swift`") { unnamed.append(line) }
        }
        return unnamed
    }

    @Test("every @Snippet is named by its file's path in the paragraph before it, for readers of the Markdown")
    func snippetsNamedByPath() throws {
        var checked = 0
        for (path, text) in try Self.articles() {
            checked += Self.quoted(after: "@Snippet(path: ", in: text).count
            for line in Self.unnamedSnippets(in: text) {
                Issue.record("\(path): name the file before \(line), as `Snippets/….swift` in the paragraph above it")
            }
        }
        #expect(checked >= 8)
        // The check finds a snippet shown with nothing a Markdown reader can follow, and accepts one named.
        let bare = "Some text.\n\n@Snippet(path: \"courier/Snippets/QuickTour\")\n"
        let named = "The tour, `Snippets/QuickTour.swift`:\n\n@Snippet(path: \"courier/Snippets/QuickTour\")\n"
        #expect(Self.unnamedSnippets(in: bare).count == 1)
        #expect(Self.unnamedSnippets(in: named).isEmpty)
    }

    @Test("the landing page starts with Getting started, then lists every article in a reading order")
    func readingOrder() throws {
        let landing = try Self.text("Sources/Courier/Documentation.docc/Courier.md")
        let topics = try #require(landing.components(separatedBy: "\n## Topics\n").last)
        let links = topics.matches(of: /<doc:(\w+)>/).map { String($0.1) }
        #expect(links.first == "GettingStarted", "\(links)")
        // Every article of the catalog is on the page, each once in the Topics.
        let articles = try Self.articles().filter { $0.path.hasPrefix("Sources/Courier/") }
            .map { ($0.path as NSString).lastPathComponent.replacingOccurrences(of: ".md", with: "") }
            .filter { $0 != "Courier" }
        let listed = topics.components(separatedBy: "\n").compactMap { line in
            line.firstMatch(of: /^- <doc:(\w+)>$/).map { String($0.1) }
        }
        #expect(Set(listed) == Set(articles), "listed \(listed.sorted()), articles \(articles.sorted())")
        #expect(Set(listed).count == listed.count, "\(listed)")
        // The Getting started article ends with the same order.
        let guide = try Self.text("Sources/Courier/Documentation.docc/GettingStarted.md")
        let order = try #require(guide.components(separatedBy: "### Read the rest in this order").last)
        let guideOrder = order.matches(of: /<doc:(\w+)>/).map { String($0.1) }.filter { $0 != "Reference" }
        #expect(
            guideOrder == listed.dropFirst().filter { $0 != "Reference" },
            "GettingStarted \(guideOrder), Courier.md \(listed)"
        )
    }

    /// The lines of `text` that run `swift package … generate-documentation`, comments left out, as words.
    static func documentationCommands(in text: String) -> [[Substring]] {
        text.split(separator: "\n")
            .filter { line in
                line.contains("swift package ") && line.contains(" generate-documentation ")
                    && !line.trimmingCharacters(in: .whitespaces).hasPrefix("#")
            }
            .map { $0.split(separator: " ") }
    }

    @Test("CI runs CONTRIBUTING.md's documentation command, word for word, under a time limit")
    func sameCommandInCI() throws {
        let readme = Self.documentationCommands(in: try Self.text("CONTRIBUTING.md"))
        let ci = Self.documentationCommands(in: try Self.text(".ci/run"))
        try #require(readme.count == 1, "CONTRIBUTING.md has \(readme.count) documentation commands")
        try #require(ci.count == 1, ".ci/run has \(ci.count) documentation commands")
        // CI puts `timeout SECONDS` in front of `swift`; nothing else may differ.
        var words = ci[0]
        let timeout = try #require(words.firstIndex(of: "timeout"), "\(ci[0])")
        #expect(Int(words[timeout + 1]) != nil)
        words.removeSubrange(timeout...(timeout + 1))
        #expect(words == readme[0])
    }

    @Test("the command builds both catalogs with every trait on, fails on any DocC warning, and adds the plugin")
    func commandOptions() throws {
        let command = try #require(Self.documentationCommands(in: try Self.text("CONTRIBUTING.md")).first).joined(
            separator: " "
        )
        for option in [
            "COURIER_DOCS=1 swift package", "--enable-all-traits", "--target Courier ", "--target CourierTesting",
            "--warnings-as-errors",
        ] {
            #expect(command.contains(option), "\(command)")
        }
        // The manifest adds swift-docc-plugin only when the command's variable is set.
        let manifest = try Self.text("Package.swift")
        #expect(manifest.contains("if Context.environment[\"COURIER_DOCS\"] == \"1\" {"))
        #expect(manifest.contains(".package(url: \"https://github.com/swiftlang/swift-docc-plugin\", from: \"1.5.0\")"))
    }

    @Test("Integrations.md has a group per package trait, listing every type and function that trait adds")
    func traitGatedAPIIsCurated() throws {
        let article = try Self.text("Sources/Courier/Documentation.docc/Integrations.md")
        let topics = try #require(article.components(separatedBy: "\n## Topics\n").last)
        var groups: [String: String] = [:]
        for group in topics.components(separatedBy: "\n### ").dropFirst() {
            let lines = group.split(separator: "\n", maxSplits: 1)
            groups[String(lines[0])] = lines.count > 1 ? String(lines[1]) : ""
        }
        let traits = try Self.text("Package.swift").matches(of: /\.trait\(\s*name: "(\w+)"/).map { String($0.1) }
        #expect(Set(groups.keys) == Set(traits), "groups \(groups.keys.sorted()), traits \(traits)")

        let declarations = try TraitGatedAPI.scan()
        #expect(declarations.contains { $0.link == "AsyncHTTPClientTransport" && $0.traits == ["AsyncHTTPClient"] })
        #expect(declarations.contains { $0.link == "Middleware/metrics(_:clock:)" && $0.traits == ["Metrics"] })
        let links = { (text: String) in text.matches(of: /\n- ``([^`]+)``/).map { String($0.1) } }
        for declaration in declarations {
            let listedIn = groups.filter { links("\n" + $0.value).contains(where: declaration.isNamed) }.keys
            let link = declaration.isExternal ? "<module>/\(declaration.link)" : declaration.link
            #expect(
                listedIn.contains { declaration.traits.contains($0) },
                "\(declaration.file): list ``\(link)`` under ### \(declaration.traits.joined(separator: " or ")) in Integrations.md"
            )
        }
        // And it lists nothing else: each entry is something a trait adds.
        for link in links(topics) {
            #expect(
                declarations.contains { $0.isNamed(link) },
                "Integrations.md lists ``\(link)``, which no trait adds"
            )
        }
    }
}

/// The public API that Sources/Courier/Integrations adds: its public types, and the public members its
/// extensions add to Courier's other types and to other modules' types, each with the DocC link that names it
/// and the traits its file's `#if` names.
enum TraitGatedAPI {
    struct Declaration {
        var file: String
        /// The link from Courier's documentation; for a member added to another module's type, the part after
        /// the module (`HTTPRequest/init(_:)` for ``HTTPTypes/HTTPRequest/init(_:)``).
        var link: String
        var traits: [String]
        var isExternal = false

        func isNamed(_ link: String) -> Bool {
            // A link may end with DocC's disambiguation by parameter types: `init(_:)-(HTTPFields)`.
            let link = link.replacing(/-\([^)]*\)$/, with: "")
            return link == self.link
                || (isExternal && link.hasSuffix("/" + self.link)
                    && link.split(separator: "/").count == self.link.split(separator: "/").count + 1)
        }
    }

    /// The name of a public type declared at the start of `line`.
    static func declaredType(_ line: Substring) -> String? {
        guard line.hasPrefix("public ") else { return nil }
        return line.firstMatch(of: /^public (?:final )?(?:class|struct|enum|actor|protocol) (\w+)/).map { String($0.1) }
    }

    static func scan() throws -> [Declaration] {
        let sources = packageRoot.appendingPathComponent("Sources/Courier")
        var files: [(path: String, text: String)] = []
        let enumerator = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)
        while let url = enumerator?.nextObject() as? URL {
            guard url.pathExtension == "swift" else { continue }
            files.append(
                (
                    url.path.replacingOccurrences(of: sources.path + "/", with: ""),
                    try String(contentsOf: url, encoding: .utf8)
                )
            )
        }
        let isIntegration = { (path: String) in path.hasPrefix("Integrations/") }
        let types = { (integrations: Bool) in
            Set(
                files.filter { isIntegration($0.path) == integrations }.flatMap { file in
                    file.text.split(separator: "\n").compactMap { declaredType($0) }
                }
            )
        }
        let courierTypes = types(false)
        let integrationTypes = types(true)
        var declarations: [Declaration] = []
        for file in files.sorted(by: { $0.path < $1.path }) where isIntegration(file.path) {
            let lines = file.text.split(separator: "\n", omittingEmptySubsequences: false)
            // The file's first `#if` names its traits; a file without one names none, and fails the test.
            let condition = lines.first { $0.hasPrefix("#if ") }?.dropFirst(4) ?? ""
            let traits = condition.components(separatedBy: "||").map { $0.trimmingCharacters(in: .whitespaces) }
            var extended: String?
            var isExternal = false
            for (index, line) in lines.enumerated() {
                if let type = declaredType(line) {
                    declarations.append(Declaration(file: file.path, link: type, traits: traits))
                } else if let match = line.firstMatch(of: /^extension ([\w.]+)/) {
                    // A type a trait declares lists its own members; Courier's other types and other modules'
                    // types get theirs listed here.
                    let root = String(match.1.split(separator: ".")[0])
                    extended = integrationTypes.contains(root) ? nil : match.1.replacingOccurrences(of: ".", with: "/")
                    isExternal = !courierTypes.contains(root)
                } else if line.hasPrefix("}") {
                    extended = nil
                } else if let type = extended, let member = memberLink(lines[index...]) {
                    declarations.append(
                        Declaration(file: file.path, link: "\(type)/\(member)", traits: traits, isExternal: isExternal)
                    )
                }
            }
        }
        return declarations
    }

    /// The DocC link of the public member declared at the first line, relative to its type:
    /// `metrics(_:clock:)`, `init(_:)`, `jsonHeaders`.
    static func memberLink(_ lines: ArraySlice<Substring>) -> String? {
        guard let first = lines.first, first.hasPrefix("    public ") else { return nil }
        if let match = first.firstMatch(of: /^    public (?:static )?(?:var|let) (\w+)/) { return String(match.1) }
        guard let match = first.firstMatch(of: /^    public (?:static )?(?:func (\w+)|init)[<(]/) else { return nil }
        let name = match.1.map(String.init) ?? "init"
        // The parameter list: from the first `(` to its match, across lines; `->` is no bracket.
        let text = lines.joined(separator: "\n").replacingOccurrences(of: "->", with: "")
        guard let open = text.firstIndex(of: "(") else { return nil }
        var depth = 0
        var parameters: [String] = [""]
        for character in text[open...] {
            if "([<".contains(character) { depth += 1 }
            if ")]>".contains(character) { depth -= 1 }
            if depth == 0 { break }
            if depth == 1 && character == "," {
                parameters.append("")
            } else if depth > 1 || character != "(" {
                parameters[parameters.count - 1].append(character)
            }
        }
        let labels = parameters.compactMap { parameter -> String? in
            let words = parameter.split(separator: ":", maxSplits: 1).first?.split(whereSeparator: \.isWhitespace)
            return words?.first.map { "\($0):" }
        }
        return "\(name)(\(labels.joined()))"
    }
}
