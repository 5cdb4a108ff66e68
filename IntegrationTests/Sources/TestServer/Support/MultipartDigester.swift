import Foundation

/// Reads a `multipart/form-data` body as it streams in and hashes each part's content, keeping only what it has
/// not decided about yet: a part's headers, or a tail shorter than the delimiter. A body of any size takes the
/// same memory.
struct MultipartDigester {
    /// Why the body is not a well-formed form.
    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    private enum Phase { case preamble, afterDelimiter, headers, content, epilogue }

    private static let crlf: [UInt8] = [13, 10]
    private static let headersEnd: [UInt8] = [13, 10, 13, 10]

    /// `CRLF--boundary`: what ends a part's content.
    private let delimiter: [UInt8]
    /// Bytes received and not yet decided about. The body is read as if it began with a CRLF, so that its first
    /// delimiter looks like the others.
    private var pending: [UInt8] = crlf
    private var phase = Phase.preamble
    private var part: MultipartDigest.Part?
    private var hash: UInt64 = 0
    private(set) var parts: [MultipartDigest.Part] = []

    init(boundary: String) {
        delimiter = Self.crlf + Array("--\(boundary)".utf8)
    }

    /// The `boundary` parameter of a `multipart/form-data` content type.
    static func boundary(of contentType: String) -> String? {
        guard contentType.lowercased().hasPrefix("multipart/form-data") else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, pair[0].lowercased() == "boundary" {
                return pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
        }
        return nil
    }

    /// Reads the next bytes of the body.
    mutating func feed(_ bytes: UnsafeRawBufferPointer) throws {
        pending.append(contentsOf: bytes)
        try process()
    }

    /// The parts, once the whole body has been fed.
    ///
    /// - Throws: ``Failure`` when the body ended before the closing delimiter.
    func finish() throws -> [MultipartDigest.Part] {
        guard phase == .epilogue else { throw Failure("the body ended before its closing delimiter") }
        return parts
    }

    private mutating func process() throws {
        var start = 0
        defer { pending.removeFirst(start) }
        while true {
            switch phase {
            case .preamble, .content:
                if let found = find(delimiter, from: start) {
                    if phase == .content {
                        digest(start..<found)
                        finishPart()
                    }
                    start = found + delimiter.count
                    phase = .afterDelimiter
                } else {
                    // Everything but a tail that could be the start of a delimiter.
                    let keep = max(start, pending.count - (delimiter.count - 1))
                    if phase == .content { digest(start..<keep) }
                    start = keep
                    return
                }
            case .afterDelimiter:
                guard pending.count - start >= 2 else { return }
                switch (pending[start], pending[start + 1]) {
                case (13, 10): phase = .headers
                case (45, 45): phase = .epilogue
                default: throw Failure("a delimiter is followed by neither CRLF nor --")
                }
                start += 2
            case .headers:
                if pending.count - start >= 2, pending[start] == 13, pending[start + 1] == 10 {
                    // A part without headers.
                    try beginPart("")
                    start += 2
                } else if let end = find(Self.headersEnd, from: start) {
                    try beginPart(String(decoding: pending[start..<end], as: UTF8.self))
                    start = end + Self.headersEnd.count
                } else {
                    guard pending.count - start <= 16 * 1024 else { throw Failure("a part's headers exceed 16 KiB") }
                    return
                }
                phase = .content
            case .epilogue:
                start = pending.count
                return
            }
        }
    }

    private mutating func beginPart(_ headers: String) throws {
        var part = MultipartDigest.Part(name: "", filename: nil, contentType: nil, length: 0, fnv1a: "")
        var named = false
        for line in headers.components(separatedBy: "\r\n") where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { throw Failure("a part's header has no colon: \(line)") }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            switch name {
            case "content-disposition":
                let parameters = Self.parameters(value)
                guard let fieldName = parameters["name"] else { throw Failure("a part's disposition has no name") }
                part.name = fieldName
                part.filename = parameters["filename"]
                named = true
            case "content-type":
                part.contentType = value
            default:
                break
            }
        }
        guard named else { throw Failure("a part has no Content-Disposition") }
        self.part = part
        hash = UploadDigest.fnv1a([UInt8]())
    }

    /// The quoted or plain parameters after `form-data;` (quotes may hold `;`).
    private static func parameters(_ value: String) -> [String: String] {
        var result: [String: String] = [:]
        var name = ""
        var text = ""
        var inName = true
        var quoted = false
        func flush() {
            let key = name.trimmingCharacters(in: .whitespaces).lowercased()
            if !key.isEmpty, !inName { result[key] = text }
            name = ""
            text = ""
            inName = true
        }
        for character in value.drop(while: { $0 != ";" }).dropFirst() {
            switch character {
            case "\"" where !inName: quoted.toggle()
            case ";" where !quoted: flush()
            case "=" where inName: inName = false
            default:
                if inName { name.append(character) } else if quoted || character != " " { text.append(character) }
            }
        }
        flush()
        return result
    }

    private mutating func digest(_ range: Range<Int>) {
        guard !range.isEmpty else { return }
        part?.length += range.count
        hash = pending.withUnsafeBufferPointer {
            UploadDigest.fnv1a(UnsafeBufferPointer(rebasing: $0[range]), continuing: hash)
        }
    }

    private mutating func finishPart() {
        guard var part else { return }
        part.fnv1a = String(hash, radix: 16)
        parts.append(part)
        self.part = nil
    }

    /// Where `needle` first occurs in `pending` at or after `start`.
    private func find(_ needle: [UInt8], from start: Int) -> Int? {
        pending.withUnsafeBufferPointer { buffer -> Int? in
            guard let base = buffer.baseAddress else { return nil }
            var index = start
            while buffer.count - index >= needle.count {
                guard let hit = memchr(base + index, Int32(needle[0]), buffer.count - index) else { return nil }
                let position = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                guard buffer.count - position >= needle.count else { return nil }
                if memcmp(base + position, needle, needle.count) == 0 { return position }
                index = position + 1
            }
            return nil
        }
    }
}
