// The fuzz targets: each feeds bytes a server controls to one of Courier's parsers and checks a cheap invariant.
//
// This file is compiled twice: into FuzzTesting's libFuzzer executable, and (through the symbolic link
// Tests/CourierTests/Fuzzing/FuzzTargets.swift) into the root package's tests, which replay every committed
// corpus and regression input through the same targets.
import Foundation

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The parsers of server-controlled bytes, each as a function of the raw input that throws ``Violation`` when
/// an invariant fails. A parser that traps stops the process: that is what the fuzzer looks for too.
enum FuzzTargets {
    /// A fuzz target: the name of its corpus folder and the function of one input.
    struct Target: Sendable {
        let name: String
        let run: @Sendable ([UInt8]) throws -> Void
    }

    /// An invariant the parser broke, with what it got.
    struct Violation: Error, CustomStringConvertible {
        let description: String
    }

    /// Every target, by the name of its folder in FuzzTesting/Corpora.
    static let all: [Target] = [
        Target(name: "cache-control", run: cacheControl),
        Target(name: "http-cache", run: httpCache),
        Target(name: "rate-limit", run: rateLimit),
        Target(name: "retry-after", run: retryAfter),
        Target(name: "authorization", run: authorization),
        Target(name: "location", run: location),
        Target(name: "host-key", run: hostKey),
        Target(name: "content-range", run: contentRange),
        Target(name: "download-resume", run: downloadResume),
        Target(name: "response-head", run: responseHead),
        Target(name: "header-fields", run: headerFields),
        Target(name: "network-number", run: networkNumber),
        Target(name: "sse", run: serverSentEvents),
        Target(name: "lines", run: lines),
        Target(name: "json-lines", run: jsonLines),
        Target(name: "redaction", run: redaction),
    ]

    /// The wall-clock time the targets read dates against: 2025-11-24, a fixed instant so a run is repeatable.
    static let now = Date(timeIntervalSince1970: 1_764_000_000)

    // MARK: Redaction

    /// A secret the `redaction` target registers, then hides in the input.
    static let registeredSecret = "fuzz-registered-5ecret-0042"

    /// Text a server controls (a body preview, a `Location`, an error's text) through the redaction scanner: a
    /// registered secret put in the middle of it never comes out, and a sensitive parameter whose value is the input
    /// percent-encoded, as `Request` encodes a query, is redacted whole.
    static func redaction(_ bytes: [UInt8]) throws {
        Redaction.registerSecret(registeredSecret)
        let text = String(decoding: bytes, as: UTF8.self)
        let middle = text.index(text.startIndex, offsetBy: text.count / 2)
        let hidden = String(text[..<middle]) + registeredSecret + String(text[middle...])
        for output in [
            Redaction.redactedText(hidden), Redaction.redactedURLString(hidden),
            Redaction.bodyPreview(Data(hidden.utf8)),
        ] {
            try check(!output.contains(registeredSecret), "the registered secret came out of \(bytes.count) bytes")
        }
        let value = PercentEncoding.encodeComponent(text)
        guard !value.isEmpty else { return }
        let url = Redaction.redactedURLString("https://h.example/p?password=" + value + "&page=2")
        try check(
            url == "https://h.example/p?password=REDACTED&page=2",
            "a parameter's value was not redacted whole: \(url)"
        )
    }

    // MARK: Header fields

    /// `Cache-Control`: the whole input is the field value. Delta-seconds are never negative, and a directive
    /// appended after a value whose quotes are closed does not replace one the value set (the first one wins).
    static func cacheControl(_ bytes: [UInt8]) throws {
        let text = String(decoding: bytes, as: UTF8.self)
        let directives = CacheControl(text)
        let requestBounds = [directives.minFresh, directives.maxStale]
        for seconds in [directives.maxAge, directives.sharedMaxAge, directives.staleIfError] + requestBounds {
            if let seconds { try check(seconds >= 0, "negative delta-seconds \(seconds)") }
        }
        guard bytes.count(where: { $0 == UInt8(ascii: "\"") }).isMultiple(of: 2) else { return }
        let extended = CacheControl(text + ", max-age=5, no-store, max-stale=7")
        try check(extended.maxAge == (directives.maxAge ?? 5), "max-age \(String(describing: extended.maxAge))")
        try check(extended.maxStale == (directives.maxStale ?? 7), "max-stale \(String(describing: extended.maxStale))")
        try check(extended.noStore, "no-store appended was not read")
    }

    /// `Age`, `Date`, `Expires`, `Cache-Control`, `Vary`, `Location` and `Content-Location` of a stored response
    /// (the input is header lines, ``fields(_:)``): ages and lifetimes are never negative or NaN, and serving
    /// the response, revalidating it and invalidating after it do not trap.
    static func httpCache(_ bytes: [UInt8]) throws {
        let headers = Dictionary(fields(bytes), uniquingKeysWith: { first, _ in first })
        let url = URL(string: "https://api.example.com/v1/items?page=2")!
        let stored = CachedResponse(
            statusCode: 200,
            headers: headers,
            body: Data(),
            requestDate: now.addingTimeInterval(-1),
            responseDate: now,
            variant: ""
        )
        let lifetime = HTTPCachePolicy.freshnessLifetime(stored)
        try check(lifetime >= 0, "freshness lifetime \(lifetime)")
        let later = now.addingTimeInterval(10)
        let age = HTTPCachePolicy.currentAge(stored, now: later)
        try check(age >= 0, "current age \(age)")
        var request = URLRequest(url: url)
        request.setValue("en", forHTTPHeaderField: "Accept-Language")
        _ = HTTPCachePolicy.isFresh(stored, for: request, now: later)
        _ = HTTPCachePolicy.mayServeOnError(stored, now: later)
        let served = HTTPCachePolicy.servedHeaders(stored, now: later)
        try check(served.headerValue("age").flatMap { Int($0) }.map { $0 >= 0 } == true, "served Age")
        _ = HTTPCachePolicy.variantToStore(request: request, hasCredential: false, statusCode: 200, headers: headers)
        _ = HTTPCachePolicy.updated(stored, with: headers, requestDate: now, responseDate: later)
        let invalidated = HTTPCachePolicy.invalidatedResources(
            method: "POST",
            url: url,
            statusCode: 201,
            headers: headers
        )
        try check(invalidated.first == HTTPCachePolicy.resource(url), "the target URI is invalidated first")
        try checkVaryKeepsTenantsApart(headers.headerValue("vary") ?? "", request: request)
    }

    /// A `Vary` that names `X-Tenant` first keeps two tenants apart whatever follows it (a combining mark after
    /// the comma, say): their variants differ unless the list has `*`, which no request matches.
    static func checkVaryKeepsTenantsApart(_ vary: String, request: URLRequest) throws {
        var tenants = [request, request]
        tenants[0].setValue("acme", forHTTPHeaderField: "X-Tenant")
        tenants[1].setValue("acme\u{A0}", forHTTPHeaderField: "X-Tenant")
        let variants = tenants.map { HTTPCachePolicy.variant(of: $0, vary: "X-Tenant," + vary) }
        guard let first = variants[0], let second = variants[1] else { return }
        try check(!first.hasSameBytes(as: second), "two tenants have one variant under Vary: X-Tenant,\(vary)")
    }

    /// `RateLimit`, `RateLimit-Policy`, `RateLimit-*`, `X-RateLimit-*` and `Retry-After` of a `429` (the input is
    /// header lines, ``fields(_:)``): no count and no duration is negative.
    static func rateLimit(_ bytes: [UInt8]) throws {
        let headers = fields(bytes)
        let observation = RateLimitHeaders.observe(status: 429, now: now) { name in
            headers.first { $0.name.caseInsensitiveEquals(name) }?.value
        }
        for count in [observation.limit, observation.remaining] {
            if let count { try check(count >= 0, "negative count \(count)") }
        }
        for duration in [observation.reset, observation.window, observation.retryAfter] {
            if let duration { try check(duration >= .zero, "negative duration \(duration)") }
        }
        for field in headers { try checkListShape(field.value) }
    }

    /// A structured-field list splits on its ASCII bytes only: with every non-ASCII scalar replaced by `x`, the
    /// list parses to the same members, with the same replacement in each item, key and value.
    static func checkListShape(_ value: String) throws {
        func replaced(_ text: String) -> String {
            String(String.UnicodeScalarView(text.unicodeScalars.map { $0.isASCII ? $0 : "x" }))
        }
        let expected = StructuredFieldList.parse(value).map { member in
            StructuredFieldList.Member(
                item: replaced(member.item),
                parameters: member.parameters.map { (replaced($0.key), replaced($0.value)) }
            )
        }
        try check(StructuredFieldList.parse(replaced(value)) == expected, "the list splits on a non-ASCII scalar")
    }

    /// `Retry-After` (the whole input is the value): the delay is never negative, and a value that is an
    /// HTTP-date asks for the time until that date, as the cache's date reader reads it.
    static func retryAfter(_ bytes: [UInt8]) throws {
        let text = String(decoding: bytes, as: UTF8.self)
        let delay = RetryAfter.delay(text, now: now)
        if let delay { try check(delay >= .zero, "negative delay \(delay)") }
        guard let date = HTTPCachePolicy.date(text, now: now) else { return }
        let expected = max(0, date.timeIntervalSince(now))
        try check(delay == .seconds(expected), "delay \(String(describing: delay)) for a date \(expected) s ahead")
    }

    /// A token an authorization server issued, as the `Authorization` value a refresher would send: either
    /// refused, or a value without a line break or NUL (which would split or end the header).
    static func authorization(_ bytes: [UInt8]) throws {
        let token = String(decoding: bytes, as: UTF8.self)
        for scheme in [AuthorizationScheme.bearer, .header("X-API-Key")] {
            guard let value = try? scheme.headerValue(for: token) else { continue }
            try check(
                !value.utf8.contains { $0 == 0x0A || $0 == 0x0D || $0 == 0 },
                "header value \(value.debugDescription)"
            )
        }
    }

    /// `Location` of a `302` (the whole input is the value): the redirect target is an absolute `http` or
    /// `https` URL with a host, which has an origin.
    static func location(_ bytes: [UInt8]) throws {
        let text = String(decoding: bytes, as: UTF8.self)
        let base = URL(string: "https://api.example.com/v1/items/7?view=full")!
        guard
            let response = HTTPURLResponse(
                url: base,
                statusCode: 302,
                httpVersion: "HTTP/1.1",
                headerFields: ["Location": text]
            )
        else { return }
        guard let target = RedirectFollower.target(of: response, requestedAt: base) else { return }
        let scheme = target.scheme?.lowercased()
        try check(scheme == "http" || scheme == "https", "scheme of \(target)")
        try check(HTTPOrigin(target) != nil, "no origin for \(target)")
        try check(
            RedirectContext.isSameOrigin(base, target) == RedirectContext.isSameOrigin(target, base),
            "same origin is not symmetric for \(target)"
        )
        _ = HTTPCachePolicy.resource(target)
    }

    /// A URL's per-host key (rate limiting, circuit breakers, concurrency limits; a redirect's `Location` is a
    /// server's bytes): the input is the URL's text. The one-pass reading of a plain authority gives Foundation's
    /// key whenever it gives one, and a text that starts with that URL's origin has the same key.
    static func hostKey(_ bytes: [UInt8]) throws {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let url = URL(string: text) else { return }
        let absolute = url.absoluteString
        guard let (key, originLength) = HostKey.plain(absolute) else { return }
        try check(key == HostKey.foundationKey(url), "\(key) ≠ Foundation's \(HostKey.foundationKey(url)) for \(url)")
        try check(HostKey.of(url) == key, "HostKey.of differs from the plain key for \(url)")
        let origin = String(decoding: absolute.utf8.prefix(originLength), as: UTF8.self)
        try check(HostKey.hasOrigin(absolute, origin), "\(absolute) does not start with its own origin \(origin)")
        if let other = URL(string: origin + "/other?x#y") {
            try check(HostKey.of(other) == key, "\(other) has another key than \(url)")
        }
    }

    /// `Content-Range` (the whole input is the value): a parsed range has positions within the complete length,
    /// the first before the last, and the canonical spelling of it parses to the same range.
    static func contentRange(_ bytes: [UInt8]) throws {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let range = ContentRange(text) else { return }
        let complete = range.completeLength.map { String($0) } ?? "*"
        let canonical: String
        switch (range.first, range.last) {
        case (let first?, let last?):
            try check(first >= 0 && first <= last, "range \(first)-\(last)")
            if let length = range.completeLength { try check(last < length, "last \(last) of \(length)") }
            canonical = "bytes \(first)-\(last)/\(complete)"
        case (nil, nil):
            try check(range.completeLength != nil, "an unsatisfied range without a complete length")
            canonical = "bytes */\(complete)"
        default:
            throw Violation(description: "one position of two: \(range)")
        }
        try check(
            ContentRange(canonical) == range,
            "\(canonical) reads as \(String(describing: ContentRange(canonical)))"
        )
    }

    /// The answer to a resumed download (the input is the header lines of a `206`), after 1,000 bytes of a
    /// 3,000-byte version with `ETag: "v1"`: the part is appended only when it is the rest of that version (the
    /// same strong ETag, not encoded, starting at byte 1,000 of 3,000); a `206` never finishes the download empty.
    static func downloadResume(_ bytes: [UInt8]) throws {
        let url = URL(string: "https://downloads.example.com/v1/file.tar")!
        let headers = Dictionary(fields(bytes), uniquingKeysWith: { first, _ in first })
        guard
            let first = HTTPURLResponse(
                url: url,
                statusCode: 200,
                httpVersion: "HTTP/1.1",
                headerFields: ["Content-Length": "3000", "ETag": "\"v1\""]
            ),
            let part = HTTPURLResponse(url: url, statusCode: 206, httpVersion: "HTTP/1.1", headerFields: headers)
        else { return }
        var state = DownloadState()
        state.begin(with: first)
        state.wrote(1_000)
        let resumption = state.resumption(for: part)
        guard resumption == .append else {
            try check(resumption == .startOver, "a 206 answered with \(resumption)")
            return
        }
        let range = part.value(forHTTPHeaderField: "Content-Range").flatMap { ContentRange($0) }
        try check(part.value(forHTTPHeaderField: "ETag") == "\"v1\"", "appended another ETag")
        try check(range?.first == 1_000 && range?.completeLength == 3_000, "appended \(String(describing: range))")
        try check(state.progress.expectedBytes == 3_000, "expected \(String(describing: state.progress.expectedBytes))")
    }

    /// The fields of a response head as a transport hands them on (the input is header lines): the check every
    /// transport runs refuses a value with a control character and both framings, and passes anything else; the
    /// event stream's `Content-Type` test accepts `text/event-stream` only, with parameters or not.
    static func responseHead(_ bytes: [UInt8]) throws {
        let url = URL(string: "https://api.example.com/v1/events")!
        let headers = Dictionary(fields(bytes), uniquingKeysWith: { first, _ in first })
        guard let response = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: headers)
        else { return }
        let problem = ResponseHeadCheck.problem(with: response, request: nil)
        var hasControl = false
        var framings = (transferEncoding: false, contentLength: false)
        for case (let name as String, let value as String) in response.allHeaderFields {
            if ResponseHeadCheck.forbiddenControl(in: value) != nil { hasControl = true }
            if name.lowercased() == "transfer-encoding" { framings.transferEncoding = true }
            if name.lowercased() == "content-length" { framings.contentLength = true }
        }
        let refused =
            hasControl || (framings.transferEncoding && framings.contentLength)
            || response.allHeaderFields.count > ResponseHeadCheck.maximumFieldCount
        try check((problem != nil) == refused, "refused: \(problem != nil), expected \(refused)")
        for (_, value) in headers {
            let isEventStream = EventSource.isEventStream(value)
            let mediaType = value.prefix { $0 != ";" }.trimmingCharacters(in: [" ", "\t"])
            let isASCII = mediaType.utf8.allSatisfy { $0 < 0x80 }
            try check(
                isEventStream == (isASCII && mediaType.lowercased() == "text/event-stream"),
                "event stream: \(value.debugDescription)"
            )
        }
    }

    /// The fields of a response head (the input is header lines) as AsyncHTTPClient's transport and the
    /// http-types bridge make them into `HTTPURLResponse` and `URLRequest` fields (``HeaderFieldJoining``, the
    /// trait-free code both run). The checked response conversion refuses exactly too many fields, a name or value
    /// with a control character, and both framings, so no CR, LF or NUL reaches its output, and what it accepts
    /// passes the check every transport runs; both styles join as a plain reference does (one entry per name in
    /// any ASCII case, under its first spelling, values in order with `", "`, a request's `Cookie` with `"; "`);
    /// the same fields give the same output.
    static func headerFields(_ bytes: [UInt8]) throws {
        let fields = fields(bytes)
        let maximum = 64
        for style in [HeaderFieldJoining.Style.response, .request] {
            let joined = HeaderFieldJoining.joined(fields, count: fields.count, style: style)
            let expected = joinedByReference(fields, style: style)
            try check(
                joined == expected,
                "\(style) joined \(joined.debugDescription), expected \(expected.debugDescription)"
            )
            try check(
                HeaderFieldJoining.joined(fields, count: 0, style: style) == joined,
                "\(style) joined differently a second time"
            )
        }
        var refusal = fields.count > maximum
        var framings = (transferEncoding: false, contentLength: false)
        for (name, value) in fields {
            if (name + value).utf8.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) { refusal = true }
            if asciiLowercased(name) == "transfer-encoding" { framings.transferEncoding = true }
            if asciiLowercased(name) == "content-length" { framings.contentLength = true }
        }
        refusal = refusal || (framings.transferEncoding && framings.contentLength)
        let checked: [String: String]
        do {
            checked = try HeaderFieldJoining.responseFields(
                fields,
                count: fields.count,
                for: nil,
                maximumFieldCount: maximum
            )
        } catch let error as CourierError {
            try check(refusal, "refused \(error.message)")
            try check(error.code == .nonHTTPResponse, "refused with \(error.code)")
            return
        }
        try check(!refusal, "accepted fields it should refuse")
        try check(checked == joinedByReference(fields, style: .response), "checked fields joined differently")
        for (name, value) in checked {
            try check(
                !(name + value).utf8.contains { $0 == 0x0A || $0 == 0x0D || $0 == 0 },
                "CR, LF or NUL in \(name.debugDescription): \(value.debugDescription)"
            )
        }
        let url = URL(string: "https://api.example.com/v1/items")!
        if let response = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: checked) {
            let problem = ResponseHeadCheck.problem(with: response, request: nil)
            try check(problem == nil, "the head check refuses what the conversion accepted: \(problem?.message ?? "")")
        }
    }

    /// The fields joined the slow, obvious way: a field's name is the same as another's when it is without regard
    /// to ASCII case or as a `String` (a dictionary's key: the Kelvin sign is `K`), and so through a chain of
    /// names; each such name under its first spelling, with every value of it in order.
    static func joinedByReference(
        _ fields: [(name: String, value: String)],
        style: HeaderFieldJoining.Style
    ) -> [String: String] {
        // Each field's label: the smallest index it reaches by steps between names the same as each other, found
        // by lowering every label to the least of its name's labels until none changes.
        let folded = fields.map { Array(asciiLowercased($0.name).utf8) }
        var label = Array(fields.indices)
        var changed = true
        while changed {
            changed = false
            var leastByFolded: [[UInt8]: Int] = [:]
            var leastByString: [String: Int] = [:]
            for index in fields.indices {
                leastByFolded[folded[index]] = min(leastByFolded[folded[index]] ?? index, label[index])
                leastByString[fields[index].name] = min(leastByString[fields[index].name] ?? index, label[index])
            }
            for index in fields.indices {
                let least = min(leastByFolded[folded[index]]!, leastByString[fields[index].name]!)
                if least < label[index] {
                    label[index] = least
                    changed = true
                }
            }
        }
        var values: [Int: [String]] = [:]
        for index in fields.indices { values[label[index], default: []].append(fields[index].value) }
        var result: [String: String] = [:]
        for (leader, joined) in values {
            let name = fields[leader].name
            let separator = style == .request && asciiLowercased(name) == "cookie" ? "; " : ", "
            result[name] = joined.joined(separator: separator)
        }
        return result
    }

    /// `text` with its ASCII capital letters, and only those, made small.
    static func asciiLowercased(_ text: String) -> String {
        String(decoding: text.utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    // MARK: Numbers

    /// `NetworkNumber`'s conversions, of the input as text and of its first eight bytes as a `Double` and an
    /// `Int64`: every result lies within its documented bounds, and digits that `Int64` reads give the same
    /// number.
    static func networkNumber(_ bytes: [UInt8]) throws {
        let text = String(decoding: bytes, as: UTF8.self)
        for maximum in [Int64.max, 1_000] {
            if let value = NetworkNumber.integer(text, maximum: maximum) {
                try check((0...maximum).contains(value), "integer \(value) beyond 0...\(maximum)")
                if let exact = Int64(text), exact >= 0, !text.hasPrefix("+") {
                    try check(value == min(exact, maximum), "integer \(value), Int64 reads \(exact)")
                }
            }
            if let value = NetworkNumber.leadingInteger(text, maximum: maximum) {
                try check((0...maximum).contains(value), "leading integer \(value) beyond 0...\(maximum)")
            }
        }
        let maximumSeconds = Double(NetworkNumber.maximumSeconds)
        if let seconds = NetworkNumber.seconds(text) {
            try check(seconds >= 0 && seconds <= maximumSeconds, "seconds \(seconds)")
            try checkDuration(NetworkNumber.duration(seconds: seconds))
        }
        var raw: UInt64 = 0
        for byte in bytes.prefix(8) { raw = raw << 8 | UInt64(byte) }
        let double = Double(bitPattern: raw)
        try checkDuration(NetworkNumber.duration(seconds: double))
        try checkDuration(NetworkNumber.duration(wholeSeconds: Int64(bitPattern: raw)))
        let integer = NetworkNumber.int(double)
        if double.isFinite, abs(double) < 9.2e18 {
            try check(integer == Int(double.rounded(.towardZero)), "int(\(double)) is \(integer)")
        }
        for number in [Double(text), Double(text.trimmingCharacters(in: .whitespaces))] {
            guard let number else { continue }
            _ = NetworkNumber.int(number)
            try checkDuration(NetworkNumber.duration(seconds: number))
        }
        _ = NetworkNumber.int(Int64(bitPattern: raw))
    }

    private static func checkDuration(_ duration: Duration) throws {
        try check(duration >= .zero && duration <= .seconds(NetworkNumber.maximumSeconds), "duration \(duration)")
    }

    // MARK: Streams

    /// An event stream: the same bytes give the same events, last event ID, reconnection time and failure in
    /// one chunk, one byte at a time and in three chunks, with a large and a small maximum event size; no
    /// event's type or ID holds a line break.
    static func serverSentEvents(_ bytes: [UInt8]) throws {
        for maximum in [1 << 20, 16] {
            let results = chunkings(of: bytes).map { cuts in
                parse(EventParser(parser: ServerSentEventParser(maximumEventSize: maximum)), bytes, cuts: cuts)
            }
            try checkSame(results) { $0.parser.parser.lastEventID == $1.parser.parser.lastEventID }
            try checkSame(results) { $0.parser.parser.reconnectionTime == $1.parser.parser.reconnectionTime }
            for event in results[0].outputs {
                let text = event.type + (event.id ?? "")
                try check(!text.utf8.contains { $0 == 0x0A || $0 == 0x0D }, "event \(event)")
                try check(event.data.utf8.count <= maximum * 3, "data of \(event.data.utf8.count) bytes")
            }
        }
    }

    /// Text lines: the same lines and failure however the bytes are cut, and no line holds a line feed.
    static func lines(_ bytes: [UInt8]) throws {
        for maximum in [1 << 20, 16] {
            let results = chunkings(of: bytes).map { parse(LineParser(maximumLength: maximum), bytes, cuts: $0) }
            try checkSame(results) { _, _ in true }
            for line in results[0].outputs {
                try check(!line.utf8.contains(0x0A), "line \(line.debugDescription)")
            }
        }
    }

    /// JSON Lines, each line any JSON value: the same values and failure however the bytes are cut.
    static func jsonLines(_ bytes: [UInt8]) throws {
        for maximum in [1 << 20, 16] {
            let results = chunkings(of: bytes).map {
                parse(JSONLineParser<JSONValue>(decoder: JSONDecoder(), maximumLength: maximum), bytes, cuts: $0)
            }
            try checkSame(results) { _, _ in true }
        }
    }

    /// Any JSON value, for the JSON Lines target.
    enum JSONValue: Decodable, Equatable {
        case null
        case bool(Bool)
        case number(Double)
        case string(String)
        case array([JSONValue])
        case object([String: JSONValue])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let value = try? container.decode(Bool.self) {
                self = .bool(value)
            } else if let value = try? container.decode(Double.self) {
                self = .number(value)
            } else if let value = try? container.decode(String.self) {
                self = .string(value)
            } else if let value = try? container.decode([JSONValue].self) {
                self = .array(value)
            } else {
                self = .object(try container.decode([String: JSONValue].self))
            }
        }
    }

    /// What a chunk parser made of a stream: its outputs, the failure that ended it, and the parser at the end.
    struct Parsed<Parser: ChunkParser> {
        var outputs: [Parser.Output] = []
        var failure: String?
        var parser: Parser
    }

    /// The ways the targets cut a stream: not at all, after every byte, and at a third and two thirds (which
    /// are different cuts for every length from 3 on).
    static func chunkings(of bytes: [UInt8]) -> [[Int]] {
        [[], Array(0..<bytes.count), [bytes.count / 3, bytes.count * 2 / 3]]
    }

    /// Feeds `bytes`, cut at `cuts`, to `parser` as the streaming sequences do, then ends the stream.
    static func parse<Parser: ChunkParser>(_ parser: Parser, _ bytes: [UInt8], cuts: [Int]) -> Parsed<Parser> {
        var parsed = Parsed<Parser>(parser: parser)
        var start = 0
        do {
            for end in cuts + [bytes.count] where end > start {
                try bytes[start..<end].withUnsafeBytes { chunk in
                    var offset = 0
                    while let output = try parsed.parser.next(in: chunk, from: &offset) {
                        parsed.outputs.append(output)
                    }
                    if offset != chunk.count {
                        parsed.failure = "stopped at \(offset) of a chunk of \(chunk.count) bytes"
                    }
                }
                start = end
                if parsed.failure != nil { return parsed }
            }
            if let last = try parsed.parser.finish() { parsed.outputs.append(last) }
        } catch {
            parsed.failure = String(describing: error)
        }
        return parsed
    }

    /// Checks that every result has the outputs and failure of the first (one chunk), and `same` of it.
    static func checkSame<Parser: ChunkParser>(
        _ results: [Parsed<Parser>],
        _ same: (Parsed<Parser>, Parsed<Parser>) -> Bool
    ) throws where Parser.Output: Equatable {
        let whole = results[0]
        for (index, result) in results.enumerated().dropFirst() {
            try check(
                result.outputs == whole.outputs && result.failure == whole.failure && same(whole, result),
                """
                chunking \(index) differs from one chunk: \(result.outputs.count) outputs and failure \
                \(result.failure ?? "none") against \(whole.outputs.count) and \(whole.failure ?? "none")
                """
            )
        }
    }

    // MARK: Helpers

    /// The input as header fields: lines (split at LF) of `name: value`, the value without the spaces and tabs
    /// after the colon; a line without a colon is skipped. Anything else (CR, NUL, invalid UTF-8) stays.
    static func fields(_ bytes: [UInt8]) -> [(name: String, value: String)] {
        bytes.split(separator: 0x0A).compactMap { line in
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
            let value = line[(colon + 1)...].drop { $0 == 0x20 || $0 == 0x09 }
            return (String(decoding: line[..<colon], as: UTF8.self), String(decoding: value, as: UTF8.self))
        }
    }

    static func check(_ condition: Bool, _ message: @autoclosure () -> String) throws {
        if !condition { throw Violation(description: message()) }
    }
}
