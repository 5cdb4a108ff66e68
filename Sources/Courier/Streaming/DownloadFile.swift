import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Bionic)
import Bionic
#endif

/// The file a download is written to: a new file beside the destination that only this download has written,
/// renamed over the destination once the body is complete, and removed otherwise.
///
/// Courier never deletes or overwrites what it did not write:
/// - The temporary file is created with `O_EXCL`, so it is a new file, never one that was there (nor a link
///   someone put at its name).
/// - It reaches the destination by `rename(2)`, which replaces a regular file in one step (a reader sees the old
///   file or the new one, never neither) and never removes a directory. Nothing is removed first.
/// - A destination that is a directory, a symbolic link, a FIFO or a device is refused before the request is
///   sent and again before the rename. A link is neither followed (the file would land wherever it points) nor
///   replaced (the link is someone's, perhaps a mount's): the caller names its target, or removes it.
final class DownloadFile {
    private let path: String
    private let handle: FileHandle
    private var isDone = false

    /// Throws ``CourierError/Code/invalidRequest`` when `destination` is not a regular file or a name that does
    /// not exist yet in a directory that does.
    static func checkDestination(_ destination: URL) throws {
        let subject = "the download's destination \(destination.path)"
        switch FileStatus.of(destination.path, followingLinks: false) {
        case .success(let status):
            switch status.kind {
            case .regular:
                return
            case .directory:
                throw refusal(
                    "\(subject) is a directory; a download replaces only a regular file: name the file to write in it"
                )
            case .symbolicLink:
                throw refusal(
                    "\(subject) is a symbolic link; a download neither follows it (the file would be written where it "
                        + "points) nor replaces it: download to its target, or remove the link first"
                )
            default:
                throw refusal("\(subject) is \(status.kind.description); a download replaces only a regular file")
            }
        case .failure(let error) where error.code == ENOENT:
            return
        case .failure(let error) where error.code == ENOTDIR:
            throw refusal("\(subject) cannot be created: a component of its directory is not a directory", error)
        case .failure(let error):
            throw refusal("\(subject) cannot be reached: \(error)", error)
        }
    }

    /// Creates a new, empty temporary file in `destination`'s directory (a rename within one directory never
    /// copies); throws ``CourierError/Code/invalidRequest`` when it cannot, before anything is sent.
    init(beside destination: URL) throws {
        let directory = destination.deletingLastPathComponent()
        path = directory.appendingPathComponent(Self.temporaryName(for: destination.lastPathComponent)).path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
        guard descriptor >= 0 else {
            let error = SystemError(code: errno)
            throw Self.refusal(
                "the download's temporary file could not be created in \(directory.path): \(error)",
                error
            )
        }
        handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    deinit { discard() }

    /// `.<name>.<UUID>.download`, with as much of `name` as keeps it within the 255 bytes a file name may have
    /// (a destination named with all 255 would otherwise be refused for its temporary file's name).
    static func temporaryName(for name: String) -> String {
        var kept = ""
        var bytes = 0
        for character in name {
            bytes += character.utf8.count
            if bytes > 200 { break }
            kept.append(character)
        }
        return ".\(kept).\(UUID().uuidString).download"
    }

    func write(_ data: Data) throws {
        try handle.write(contentsOf: data)
    }

    /// Empties the file, for a body that starts the download again from zero.
    func truncate() throws {
        try handle.truncate(atOffset: 0)
    }

    /// Flushes the file to disk and renames it over `destination`, after checking again that the destination is
    /// not something else now (a directory made meanwhile, say).
    func moveIntoPlace(at destination: URL) throws {
        try handle.synchronize()
        try handle.close()
        try Self.checkDestination(destination)
        guard rename(path, destination.path) == 0 else {
            let error = SystemError(code: errno)
            throw CocoaError(
                .fileWriteUnknown,
                userInfo: [
                    NSFilePathErrorKey: destination.path,
                    NSLocalizedFailureReasonErrorKey: "the download could not be moved into place: \(error)",
                    NSUnderlyingErrorKey: POSIXError(POSIXErrorCode(rawValue: error.code) ?? .EIO),
                ]
            )
        }
        isDone = true
    }

    /// Closes and removes the temporary file, unless it was moved into place; safe to call more than once.
    func discard() {
        guard !isDone else { return }
        isDone = true
        try? handle.close()
        _ = unlink(path)
    }

    private static func refusal(_ message: String, _ underlying: SystemError? = nil) -> CourierError {
        CourierError(.invalidRequest, message: message, underlying: underlying)
    }
}
