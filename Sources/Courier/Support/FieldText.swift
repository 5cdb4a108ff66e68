/// Reading a field's text as HTTP does: by its bytes. The separators (`,` `;` `=`) and the optional whitespace
/// around items (spaces and tabs, RFC 9110 §5.6.3) are ASCII; read as `Character`s, a separator followed by a
/// combining mark would be one character and no separator, U+037E would equal `;`, and Foundation's
/// `.whitespaces` would trim a no-break space that is part of a value to the server.
enum FieldText {
    /// Whether `byte` is HTTP's optional whitespace: a space or a horizontal tab.
    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
    }

    /// `text` without the spaces and tabs around it.
    static func trimmed(_ text: Substring) -> Substring {
        guard let first = text.utf8.firstIndex(where: { !isWhitespace($0) }),
            let last = text.utf8.lastIndex(where: { !isWhitespace($0) })
        else { return text[text.endIndex...] }
        return text[first..<text.utf8.index(after: last)]
    }

    /// `text` split at every `separator` byte (quotes are not special: for lists of tokens such as `Vary`).
    static func split(_ text: Substring, on separator: UInt8) -> [Substring] {
        var parts: [Substring] = []
        var start = text.startIndex
        var index = text.utf8.startIndex
        while let found = text.utf8[index...].firstIndex(of: separator) {
            parts.append(text[start..<found])
            start = text.utf8.index(after: found)
            index = start
        }
        parts.append(text[start...])
        return parts
    }

    /// `text` before and after its first `separator` byte; no second part when it has none.
    static func splitOnce(_ text: Substring, at separator: UInt8) -> (Substring, Substring?) {
        guard let index = text.utf8.firstIndex(of: separator) else { return (text, nil) }
        return (text[..<index], text[text.utf8.index(after: index)...])
    }
}
