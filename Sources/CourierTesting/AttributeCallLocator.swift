import Courier
import Foundation

/// Finds where a call written inside a `@Test(…)` or `@Suite(…)` attribute really is in its source file.
///
/// **Why.** The testing library's macros copy the traits written in those attributes into code they generate,
/// and Swift gives `#line`, `#column` and `#_sourceLocation` evaluated in generated code the position of the
/// declaration the macro is attached to (`func` or `struct`), not the position of the call. So a route's
/// `expectCalls` written in `@Test(.mockTransport { … })` captures the test function's line. There is no
/// other way to learn a position at run time, so this reads the file: when a captured position is the start
/// of a declaration, it lists the calls (`expectCalls`, `mockTransport`, `testTransport`) written in that
/// declaration's `@Test`/`@Suite` attributes, each at the position Swift gives a call written in ordinary
/// code (the start of its argument list: its `(`, or `{` for a trailing closure).
///
/// It runs only when an expectation has failed, reads each file once, and answers `nil` (so the captured
/// position stands) when the file cannot be read or the position is not such a declaration.
enum AttributeCallLocator {
    /// A call found in an attribute: the called name and the position of its argument list.
    struct Call: Equatable {
        let name: String
        let line: Int
        let column: Int
    }

    /// The names of the calls worth finding.
    static let names: Set<String> = ["expectCalls", "mockTransport", "testTransport"]

    private static let cache = LockedState<[String: [Token]]>([:])

    /// The calls named in ``names`` written in the `@Test`/`@Suite` attributes of the declaration that
    /// starts at `line`:`column` of the file at `filePath`, in the order they are written; `nil` when there
    /// is no such declaration (the position is where the call itself is written) or the file cannot be read.
    static func calls(inAttributesOfDeclarationAt line: Int, column: Int, filePath: String) -> [Call]? {
        guard let tokens = tokens(ofFile: filePath) else { return nil }
        guard let start = tokens.firstIndex(where: { $0.line == line && $0.column == column }),
            case .identifier(let keyword) = tokens[start].kind,
            declarationKeywords.contains(keyword) || modifiers.contains(keyword)
        else { return nil }
        var calls: [Call] = []
        var found = false
        for attribute in attributes(before: start, in: tokens).reversed()
        where testingAttributes.contains(attribute.name) {
            found = true
            calls += self.calls(in: attribute.arguments, of: tokens)
        }
        return found ? calls : nil
    }

    // MARK: Attributes

    private static let testingAttributes: Set<String> = ["Test", "Suite"]

    private static let declarationKeywords: Set<String> = [
        "func", "struct", "class", "enum", "actor", "extension", "init", "var", "let", "subscript",
    ]

    private static let modifiers: Set<String> = [
        "public", "private", "fileprivate", "internal", "package", "open", "static", "final", "nonisolated",
        "mutating", "nonmutating", "override", "required", "convenience", "dynamic", "lazy", "indirect",
        "distributed", "consuming", "borrowing", "class",
    ]

    /// An attribute: the last component of its name, and the range of tokens inside its parentheses.
    private struct Attribute {
        let name: String
        let arguments: Range<Int>
    }

    /// The attributes written before the declaration whose first token is at `start`, nearest first.
    private static func attributes(before start: Int, in tokens: [Token]) -> [Attribute] {
        var attributes: [Attribute] = []
        var index = start - 1
        while index >= 0 {
            switch tokens[index].kind {
            case .identifier(let word) where modifiers.contains(word):
                index -= 1
            case .punctuation(")"):
                guard let open = matchingOpen(of: index, in: tokens) else { return attributes }
                if let (name, at) = attributeName(endingAt: open - 1, in: tokens) {
                    attributes.append(Attribute(name: name, arguments: (open + 1)..<index))
                    index = at - 1
                } else if open > 0, case .identifier(let word) = tokens[open - 1].kind, modifiers.contains(word) {
                    index = open - 2  // `private(set)` and the like
                } else {
                    return attributes
                }
            case .identifier:
                guard let (name, at) = attributeName(endingAt: index, in: tokens) else { return attributes }
                attributes.append(Attribute(name: name, arguments: index..<index))
                index = at - 1
            default:
                return attributes
            }
        }
        return attributes
    }

    /// The attribute name (`Test`, or `Testing.Test` as `Test`) whose last token is at `end`, and the index
    /// of its `@`; `nil` when the tokens there do not form one.
    private static func attributeName(endingAt end: Int, in tokens: [Token]) -> (String, Int)? {
        guard end >= 0, case .identifier(let last) = tokens[end].kind else { return nil }
        var index = end - 1
        while index >= 1, tokens[index].kind == .punctuation("."), case .identifier = tokens[index - 1].kind {
            index -= 2
        }
        guard index >= 0, tokens[index].kind == .punctuation("@") else { return nil }
        return (last, index)
    }

    private static func matchingOpen(of close: Int, in tokens: [Token]) -> Int? {
        var depth = 0
        var index = close
        while index >= 0 {
            switch tokens[index].kind {
            case .punctuation(")"): depth += 1
            case .punctuation("("):
                depth -= 1
                if depth == 0 { return index }
            default: break
            }
            index -= 1
        }
        return nil
    }

    /// The calls `.name(` or `.name {` in `range`, with the position of their argument list.
    private static func calls(in range: Range<Int>, of tokens: [Token]) -> [Call] {
        var calls: [Call] = []
        for index in range where index > range.lowerBound && index + 1 < range.upperBound {
            guard case .identifier(let name) = tokens[index].kind, names.contains(name),
                tokens[index - 1].kind == .punctuation("."),
                tokens[index + 1].kind == .punctuation("(") || tokens[index + 1].kind == .punctuation("{")
            else { continue }
            calls.append(Call(name: name, line: tokens[index + 1].line, column: tokens[index + 1].column))
        }
        return calls
    }

    // MARK: Tokens

    struct Token: Equatable {
        enum Kind: Equatable {
            case identifier(String)
            case punctuation(Character)
            /// A string literal or a number, whose content does not matter here.
            case literal
        }

        let kind: Kind
        /// 1-based, as `#line`.
        let line: Int
        /// 1-based, in UTF-8 bytes, as `#column`.
        let column: Int
    }

    private static func tokens(ofFile path: String) -> [Token]? {
        if let cached = cache.withLock({ $0[path] }) { return cached }
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        let tokens = tokenize(Array(data))
        cache.withLock { $0[path] = tokens }
        return tokens
    }

    /// Splits Swift source into identifiers, punctuation and literals, skipping comments and the insides of
    /// string literals (interpolations included), which is all that finding attributes and calls needs.
    static func tokenize(_ source: [UInt8]) -> [Token] {
        var scanner = Scanner(source: source)
        var tokens: [Token] = []
        scanner.scan(into: &tokens, until: nil)
        return tokens
    }

    private struct Scanner {
        let source: [UInt8]
        var offset = 0
        var line = 1
        var lineStart = 0

        init(source: [UInt8]) {
            self.source = source
        }

        var column: Int { offset - lineStart + 1 }

        func peek(_ ahead: Int = 0) -> UInt8? {
            offset + ahead < source.count ? source[offset + ahead] : nil
        }

        mutating func advance() {
            if source[offset] == UInt8(ascii: "\n") {
                line += 1
                lineStart = offset + 1
            }
            offset += 1
        }

        /// Scans tokens until the end, or until the `)` that closes an interpolation (`closing` is then
        /// `")"`), which it consumes.
        mutating func scan(into tokens: inout [Token], until closing: UInt8?) {
            var depth = 0
            while let byte = peek() {
                let (line, column) = (self.line, self.column)
                switch byte {
                case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                    advance()
                case UInt8(ascii: "/") where peek(1) == UInt8(ascii: "/"):
                    while let next = peek(), next != UInt8(ascii: "\n") { advance() }
                case UInt8(ascii: "/") where peek(1) == UInt8(ascii: "*"):
                    skipBlockComment()
                case UInt8(ascii: "\""):
                    skipString(hashes: 0)
                    tokens.append(Token(kind: .literal, line: line, column: column))
                case UInt8(ascii: "#"):
                    var hashes = 0
                    while peek(hashes) == UInt8(ascii: "#") { hashes += 1 }
                    if peek(hashes) == UInt8(ascii: "\"") {
                        for _ in 0..<hashes { advance() }
                        skipString(hashes: hashes)
                        tokens.append(Token(kind: .literal, line: line, column: column))
                    } else {
                        advance()
                        tokens.append(Token(kind: .punctuation("#"), line: line, column: column))
                    }
                case UInt8(ascii: "`"):
                    advance()
                    let start = offset
                    while let next = peek(), next != UInt8(ascii: "`"), next != UInt8(ascii: "\n") { advance() }
                    let name = String(decoding: source[start..<offset], as: UTF8.self)
                    if peek() == UInt8(ascii: "`") { advance() }
                    tokens.append(Token(kind: .identifier(name), line: line, column: column))
                case _ where Self.isIdentifierStart(byte):
                    let start = offset
                    while let next = peek(), Self.isIdentifierPart(next) { advance() }
                    let name = String(decoding: source[start..<offset], as: UTF8.self)
                    tokens.append(Token(kind: .identifier(name), line: line, column: column))
                case _ where Self.isDigit(byte):
                    while let next = peek(),
                        Self.isIdentifierPart(next) || next == UInt8(ascii: ".") && peek(1).map(Self.isDigit) == true
                    {
                        advance()
                    }
                    tokens.append(Token(kind: .literal, line: line, column: column))
                default:
                    advance()
                    if let closing {
                        if byte == UInt8(ascii: "(") { depth += 1 }
                        if byte == closing {
                            if depth == 0 { return }
                            depth -= 1
                        }
                    }
                    tokens.append(
                        Token(kind: .punctuation(Character(Unicode.Scalar(byte))), line: line, column: column)
                    )
                }
            }
        }

        mutating func skipBlockComment() {
            var depth = 0
            while let byte = peek() {
                if byte == UInt8(ascii: "/"), peek(1) == UInt8(ascii: "*") {
                    depth += 1
                    advance()
                } else if byte == UInt8(ascii: "*"), peek(1) == UInt8(ascii: "/") {
                    depth -= 1
                    advance()
                    if depth == 0 {
                        advance()
                        return
                    }
                }
                advance()
            }
        }

        /// Skips a string literal whose opening `#`s (if any) are consumed and whose first `"` is next;
        /// interpolations are scanned (and their tokens dropped), so a `)` or `"` inside them ends nothing.
        mutating func skipString(hashes: Int) {
            let multiline = peek(1) == UInt8(ascii: "\"") && peek(2) == UInt8(ascii: "\"")
            let quotes = multiline ? 3 : 1
            for _ in 0..<quotes { advance() }
            while let byte = peek() {
                if byte == UInt8(ascii: "\\"), (0..<hashes).allSatisfy({ peek(1 + $0) == UInt8(ascii: "#") }) {
                    for _ in 0...hashes { advance() }
                    if peek() == UInt8(ascii: "(") {
                        advance()
                        var dropped: [Token] = []
                        scan(into: &dropped, until: UInt8(ascii: ")"))
                    } else if peek() != nil {
                        advance()  // the escaped character
                    }
                    continue
                }
                if byte == UInt8(ascii: "\""), (0..<quotes).allSatisfy({ peek($0) == UInt8(ascii: "\"") }),
                    (0..<hashes).allSatisfy({ peek(quotes + $0) == UInt8(ascii: "#") })
                {
                    for _ in 0..<(quotes + hashes) { advance() }
                    return
                }
                if byte == UInt8(ascii: "\n"), !multiline { return }  // unterminated: stop at the line's end
                advance()
            }
        }

        static func isIdentifierStart(_ byte: UInt8) -> Bool {
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "$") || byte >= 0x80
        }

        static func isIdentifierPart(_ byte: UInt8) -> Bool {
            isIdentifierStart(byte) || isDigit(byte)
        }

        static func isDigit(_ byte: UInt8) -> Bool {
            byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
        }
    }
}
