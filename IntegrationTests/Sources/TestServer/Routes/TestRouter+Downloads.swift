import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// A resource of `/download/:key` per key: its version, how many requests it has answered, and what they asked.
private actor DownloadResources {
    private var versions: [String: Int] = [:]
    private var counts: [String: Int] = [:]
    private var logs: [String: [DownloadRecord]] = [:]

    /// Counts a request for `key`; returns its number (from 1) and the resource's version now.
    func arrive(_ key: String) -> (number: Int, version: Int) {
        counts[key, default: 0] += 1
        return (counts[key] ?? 1, versions[key] ?? 1)
    }

    /// Makes the resource of `key` change: every later answer carries a new version.
    func change(_ key: String) {
        versions[key] = (versions[key] ?? 1) + 1
    }

    func record(_ key: String, _ record: DownloadRecord) {
        logs[key, default: []].append(record)
    }

    func log(_ key: String) -> [DownloadRecord] {
        logs[key] ?? []
    }
}

extension TestServers {
    /// The byte at `offset` of version `version` of a `/download/:key` resource: version 1 is
    /// ``largeBodyByte(at:)``, and each later version is the same pattern shifted, so that every byte of it
    /// differs.
    public static func downloadByte(at offset: Int, version: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: (offset + (version - 1) * 97) % 251)
    }
}

/// Downloads that honour `Range` and `If-Range`, and fail on purpose.
///
/// - `GET /download/:key?bytes=N` → a resource of `N` bytes (up to 16 GiB) of
///   ``TestServers/downloadByte(at:version:)`` at the key's current version (1 at first), with a `Content-Length`
///   and `Accept-Ranges: bytes`, generated as it is written (the server holds one 62.75 KiB chunk).
///   - Its validator, by `?validator=`: `etag` (the default, a strong `ETag: "KEY-vVERSION"`), `weak`
///     (`ETag: W/"KEY-vVERSION"`), `lastModified` (a `Last-Modified` date that moves on with the version), or
///     `none`.
///   - `Range: bytes=S-` answers `206` with `Content-Range: bytes S-(N-1)/N` and the bytes from `S`, unless an
///     `If-Range` differs from the current strong validator (a weak `ETag` never matches), which answers `200`
///     with the whole resource; `S >= N` answers `416`. `?misrange=1` makes a `206` start one byte later than
///     asked (and say so in its `Content-Range`).
///   - Faults, for the key's first `?faults=K` requests (default 1): `?cutAfter=B` drops the connection after
///     `B` bytes of the body (short of its `Content-Length`); `?stallAfter=B` sends `B` bytes, then nothing until
///     the key's `hits` counter reaches 1 (a test hits `/hit/KEY`; at most ``maximumWaitMilliseconds``) and drops
///     the connection. `?changeOnFault=1` makes the resource change (a new version) before a cut drops the
///     connection, so that a resumed request's `If-Range` no longer matches.
/// - `GET /download/:key/log` → every request of the key as a ``DownloadRecord``, in order.
/// - `GET /download/:key/change` → the resource changes: every later answer carries a new version (`204`).
extension TestRouter {
    static func addDownloadRoutes(to router: Router<BasicRequestContext>, state: ServerState) {
        let resources = DownloadResources()

        router.get("download/:key/log") { _, context in
            try Response.json(await resources.log(try context.parameters.require("key")))
        }

        router.get("download/:key/change") { _, context in
            await resources.change(try context.parameters.require("key"))
            return Response(status: .noContent)
        }

        router.get("download/:key") { request, context in
            let key = try context.parameters.require("key")
            let query = QueryItems(request.uri.query)
            guard let bytes = query["bytes"].flatMap({ Int($0) }), (0...maximumStreamedBody).contains(bytes) else {
                return Response.badRequest("bytes must be 0...\(maximumStreamedBody)")
            }
            let kind = query["validator"] ?? "etag"
            guard ["etag", "weak", "lastModified", "none"].contains(kind) else {
                return Response.badRequest("validator must be etag, weak, lastModified or none")
            }
            let (number, version) = await resources.arrive(key)
            let faulted = number <= Int(query["faults"] ?? "1") ?? 1
            let cutAfter = faulted ? query["cutAfter"].flatMap { Int($0) } : nil
            let stallAfter = faulted ? query["stallAfter"].flatMap { Int($0) } : nil

            var headers = HTTPFields()
            headers[.contentType] = "application/octet-stream"
            headers[.acceptRanges] = "bytes"
            // The validator an `If-Range` must equal for a range to be served: strong ones only (RFC 9110 §13.1.5).
            var strongValidator: String?
            switch kind {
            case "etag":
                strongValidator = "\"\(key)-v\(version)\""
                headers[.eTag] = strongValidator
            case "weak":
                headers[.eTag] = "W/\"\(key)-v\(version)\""
            case "lastModified":
                strongValidator = HTTPDate.string(
                    from: Date(timeIntervalSince1970: 1_700_000_000 + Double(version) * 60)
                )
                headers[.lastModified] = strongValidator
            default:
                break
            }

            var start = 0
            var status = HTTPResponse.Status.ok
            let range = request.headers[.range]
            let ifRange = request.headers[.ifRange]
            if let asked = Self.rangeStart(range), ifRange == nil || ifRange == strongValidator {
                guard asked < bytes else {
                    headers[.contentRange] = "bytes */\(bytes)"
                    await resources.record(
                        key,
                        DownloadRecord(range: range, ifRange: ifRange, status: 416, version: version, faulted: false)
                    )
                    return Response(status: .rangeNotSatisfiable, headers: headers)
                }
                start = query["misrange"] == "1" ? min(asked + 1, bytes - 1) : asked
                status = .partialContent
                headers[.contentRange] = "bytes \(start)-\(bytes - 1)/\(bytes)"
            }
            let isFaulted = cutAfter != nil || stallAfter != nil
            await resources.record(
                key,
                DownloadRecord(
                    range: range,
                    ifRange: ifRange,
                    status: status.code,
                    version: version,
                    faulted: isFaulted
                )
            )
            let changeOnFault = query["changeOnFault"] == "1"
            let body = ResponseBody(contentLength: bytes - start) { [start] writer in
                let stop = min(bytes, start + (cutAfter ?? stallAfter ?? bytes))
                var position = start
                while position < stop {
                    // A slice of the shared chunk that starts where the pattern is at `position`.
                    let shift = Int(TestServers.downloadByte(at: position, version: version))
                    let length = min(streamedChunk.readableBytes - shift, stop - position)
                    try await writer.write(streamedChunk.getSlice(at: shift, length: length)!)
                    position += length
                }
                if cutAfter != nil {
                    if changeOnFault { await resources.change(key) }
                    throw DroppedDownload()
                }
                if stallAfter != nil {
                    try? await Self.waitForHit(key, state: state)
                    throw DroppedDownload()
                }
                try await writer.finish(nil)
            }
            return Response(status: status, headers: headers, body: body)
        }
    }

    /// `S` of `Range: bytes=S-`; `nil` for no range or any other form.
    private static func rangeStart(_ header: String?) -> Int? {
        guard let header, header.hasPrefix("bytes="), header.hasSuffix("-") else { return nil }
        return Int(header.dropFirst(6).dropLast())
    }
}

/// Thrown by `/download/:key`'s body writer to make Hummingbird drop the connection mid-body.
private struct DroppedDownload: Error {}
