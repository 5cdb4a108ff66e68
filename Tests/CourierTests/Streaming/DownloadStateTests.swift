import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Content-Range and a download's resumption, synchronously")
struct DownloadStateTests {
    @Test(
        "Content-Range parses byte ranges, and refuses, never traps on, anything else",
        arguments: [
            ("bytes 1000-2999/3000", ContentRange.Parts(1_000, 2_999, 3_000)),
            ("BYTES 0-0/1", ContentRange.Parts(0, 0, 1)),
            (" bytes  5-9/* ", ContentRange.Parts(5, 9, nil)),
            ("bytes */3000", ContentRange.Parts(nil, nil, 3_000)),
            ("bytes 0-99/99999999999999999999999", ContentRange.Parts(0, 99, .max)),
            ("bytes 99999999999999999999999-99999999999999999999999/*", ContentRange.Parts(.max, .max, nil)),
            ("bytes 0-99999999999999999999999/99999999999999999999999", nil),
            ("bytes 5-4/10", nil),
            ("bytes 0-10/10", nil),
            ("bytes */*", nil),
            ("bytes -5-9/10", nil),
            ("bytes 5-9", nil),
            ("bytes 5-9/10/11", nil),
            ("bytes 0x1-2/3", nil),
            ("items 0-9/10", nil),
            ("bytes", nil),
            ("", nil),
            ("bytes 1e3-2e3/3e3", nil),
        ]
    )
    func contentRange(_ text: String, _ expected: ContentRange.Parts?) {
        let range = ContentRange(text)
        #expect(range.map { ContentRange.Parts($0.first, $0.last, $0.completeLength) } == expected, "\(text)")
    }

    private func response(_ status: Int, _ headers: [String: String]) -> HTTPURLResponse {
        HTTPURLResponse(
            url: URL(string: "http://127.0.0.1/file")!,
            statusCode: status,
            httpVersion: "HTTP/1.1",
            headerFields: headers
        )!
    }

    /// A download that wrote 1,000 of 3,000 bytes of `ETag: "v1"`.
    private var halfway: DownloadState {
        var state = DownloadState()
        state.begin(with: response(200, ["ETag": "\"v1\"", "Content-Length": "3000"]))
        state.wrote(1_000)
        return state
    }

    @Test("a 206 is appended only with the same strong ETag, the start asked for and the same complete length")
    func resumption() {
        let cases: [([String: String], Int, DownloadState.Resumption)] = [
            (["ETag": "\"v1\"", "Content-Range": "bytes 1000-2999/3000"], 206, .append),
            (["ETag": "\"v2\"", "Content-Range": "bytes 1000-2999/3000"], 206, .startOver),
            (["ETag": "W/\"v1\"", "Content-Range": "bytes 1000-2999/3000"], 206, .startOver),
            (["Content-Range": "bytes 1000-2999/3000"], 206, .startOver),
            (["ETag": "\"v1\"", "Content-Range": "bytes 1001-2999/3000"], 206, .startOver),
            (["ETag": "\"v1\"", "Content-Range": "bytes 1000-2999/3001"], 206, .startOver),
            (["ETag": "\"v1\"", "Content-Range": "bytes 1000-2999/*"], 206, .startOver),
            (["ETag": "\"v1\"", "Content-Range": "bytes 1000-2999/3000", "Content-Encoding": "gzip"], 206, .startOver),
            (["ETag": "\"v1\""], 206, .startOver),
            (["ETag": "\"v1\"", "Content-Length": "3000"], 200, .restart),
            (["Content-Range": "bytes */500"], 416, .startOver),
            (["ETag": "\"v1\""], 204, .fail),
            (["ETag": "\"v1\""], 201, .fail),
        ]
        for (headers, status, expected) in cases {
            var state = halfway
            #expect(state.resumption(for: response(status, headers)) == expected, "\(status) \(headers)")
        }
    }

    @Test("a validator matches byte for byte: a canonically equivalent ETag or Last-Modified is another version")
    func validatorBytes() throws {
        let url = URL(string: "https://files.example.test/a")!
        func response(_ name: String, _ value: String) throws -> HTTPURLResponse {
            try #require(HTTPURLResponse(url: url, statusCode: 206, httpVersion: nil, headerFields: [name: value]))
        }
        let tag = DownloadState.Validator.entityTag("\"caf\u{E9}\"")
        #expect(tag.matches(try response("ETag", "\"caf\u{E9}\"")))
        #expect(!tag.matches(try response("ETag", "\"cafe\u{301}\"")))
        let date = DownloadState.Validator.lastModified("Tue, 24 Nov 2026 00:00:00 GMT\u{E9}")
        #expect(date.matches(try response("Last-Modified", "Tue, 24 Nov 2026 00:00:00 GMT\u{E9}")))
        #expect(!date.matches(try response("Last-Modified", "Tue, 24 Nov 2026 00:00:00 GMTe\u{301}")))
    }

    @Test("the validator: a strong ETag, else a Last-Modified a second before the Date, else none")
    func validator() {
        let cases: [([String: String], DownloadState.Validator?)] = [
            (["ETag": "\"v1\"", "Last-Modified": "Tue, 24 Nov 2026 00:00:00 GMT"], .entityTag("\"v1\"")),
            (["ETag": "W/\"v1\""], nil),
            (["Last-Modified": "Tue, 24 Nov 2026 00:00:00 GMT"], nil),
            (["Last-Modified": "Tue, 24 Nov 2026 00:00:00 GMT", "Date": "Tue, 24 Nov 2026 00:00:00 GMT"], nil),
            (
                ["Last-Modified": "Tue, 24 Nov 2026 00:00:00 GMT", "Date": "Tue, 24 Nov 2026 00:00:01 GMT"],
                .lastModified("Tue, 24 Nov 2026 00:00:00 GMT")
            ),
            (["ETag": "W/\"v1\"", "Last-Modified": "garbage", "Date": "Tue, 24 Nov 2026 00:00:01 GMT"], nil),
            (["ETag": "\"v1\"", "Content-Encoding": "gzip"], nil),
            (["ETag": "\"v1\"", "Content-Encoding": "identity"], .entityTag("\"v1\"")),
        ]
        for (headers, expected) in cases {
            var state = DownloadState()
            state.begin(with: response(200, headers))
            #expect(state.validator == expected, "\(headers)")
        }
        var partial = DownloadState()
        partial.begin(with: response(206, ["ETag": "\"v1\"", "Content-Range": "bytes 0-9/100"]))
        #expect(partial.validator == nil, "a 206 the caller asked for is not resumed")
    }

    @Test("a hostile Content-Length is clamped, and a chunk past the complete length is refused")
    func lengths() throws {
        var state = DownloadState()
        state.begin(with: response(200, ["Content-Length": "99999999999999999999999"]))
        #expect(state.expectedBytes == .max)
        state = halfway
        #expect(throws: Never.self) { try state.checkRoom(for: 2_000, response: response(206, [:])) }
        #expect(throws: DownloadState.Overrun.self) { try state.checkRoom(for: 2_001, response: response(206, [:])) }
        #expect(throws: DownloadState.ShortBody.self) { try state.checkLength(response: response(200, [:])) }
    }
}

extension ContentRange {
    /// The parsed positions, for comparing with a table.
    struct Parts: Equatable, Sendable, CustomTestStringConvertible {
        let first: Int64?
        let last: Int64?
        let completeLength: Int64?

        init(_ first: Int64?, _ last: Int64?, _ completeLength: Int64?) {
            (self.first, self.last, self.completeLength) = (first, last, completeLength)
        }

        var testDescription: String {
            "\(first.map(String.init) ?? "*")-\(last.map(String.init) ?? "*")/\(completeLength.map(String.init) ?? "*")"
        }
    }
}
