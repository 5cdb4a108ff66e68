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
/// renamed over the destination once the body is complete, and removed otherwise — or, for a resumable download, the
/// destination's partial file, kept with its ``DownloadResumeRecord`` when the download does not complete.
///
/// Courier never deletes or overwrites what it did not write:
/// - The temporary file is created with `O_EXCL`, so it is a new file, never one that was there (nor a link
///   someone put at its name).
/// - A resumable download's partial file (`.NAME.courier-partial` beside `NAME`) and its record
///   (`.NAME.courier-partial.json`) are Courier's names; what is at them is used only when it is a regular file of
///   the process's user with no other link to it, opened without following a link, readable and writable by that
///   user alone (`0600`), and locked (`flock`) for the download's duration, so that two downloads never write one
///   partial file. Anything else there (a link, a directory, a FIFO, another user's file) is refused, not removed.
/// - It reaches the destination by ``FilePlacement``: a rename that takes a free name only while it is free and
///   replaces only a regular file, in one step (a reader sees the old file or the new one, never neither), also
///   when a link or a directory appears at the name after the last check. Nothing is removed first.
/// - A destination that is a directory, a symbolic link, a FIFO or a device is refused before the request is
///   sent, again before the rename, and by the rename itself. A link is neither followed (the file would land
///   wherever it points) nor replaced (the link is someone's, perhaps a mount's): the caller names its target, or
///   removes it.
final class DownloadFile {
    /// Where the file is: its temporary name, or a resumable download's partial file.
    private var path: String
    private let handle: FileHandle
    private var isDone = false
    /// Where a resumable download keeps its record; `nil` for a download that is not resumable.
    private let recordPath: String?
    /// Whether the partial file and its record stay when the download does not complete: a resumable download's,
    /// once a version with a validator has begun.
    private var keepsPartial = false

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
        recordPath = nil
    }

    /// The partial file and the record of a resumable download to `destination`.
    static func partialPaths(for destination: URL) -> (file: String, record: String) {
        let name = shortened(destination.lastPathComponent)
        let file = destination.deletingLastPathComponent().appendingPathComponent(".\(name).courier-partial").path
        return (file, file + ".json")
    }

    /// Opens the partial file of a resumable download to `destination`, creating it when there is none, and locks
    /// it; throws ``CourierError/Code/invalidRequest`` before anything is sent when what is at its name, or at its
    /// record's, is not a file of this user's own, or when another download holds it.
    init(resumingBeside destination: URL) throws {
        let (path, recordPath) = Self.partialPaths(for: destination)
        self.path = path
        self.recordPath = recordPath
        for name in [path, recordPath] {
            switch FileStatus.of(name, followingLinks: false) {
            case .success(let status):
                if let problem = Self.problem(with: status) {
                    throw Self.refusal("the resumable download's partial file \(name) is \(problem); it is left alone")
                }
            case .failure(let error) where error.code != ENOENT:
                throw Self.refusal("the resumable download's partial file \(name) cannot be reached: \(error)", error)
            case .failure:
                break
            }
        }
        let descriptor = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let error = SystemError(code: errno)
            throw Self.refusal("the resumable download's partial file \(path) could not be opened: \(error)", error)
        }
        handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        // Nothing is removed on the way out until a version begins.
        isDone = true
        let opened: FileStatus
        switch FileStatus.of(descriptor: descriptor) {
        case .success(let status): opened = status
        case .failure(let error):
            throw Self.refusal("the resumable download's partial file \(path) cannot be read: \(error)", error)
        }
        if let problem = Self.problem(with: opened) {
            throw Self.refusal("the resumable download's partial file \(path) is \(problem); it is left alone")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let error = SystemError(code: errno)
            throw Self.refusal(
                "another download to \(destination.path) is writing its partial file \(path) (\(error))",
                error
            )
        }
        // The name may have been renamed into place by the download that held the lock meanwhile: the lock is
        // good only for the file still at the name.
        guard case .success(let named) = FileStatus.of(path, followingLinks: false), named.identity == opened.identity
        else {
            throw Self.refusal("another download to \(destination.path) finished with its partial file \(path)")
        }
        _ = fchmod(descriptor, 0o600)
        isDone = false
    }

    /// What is wrong with the file `info` describes for a partial file, or `nil` for a regular file of this
    /// process's user, with no other link to it.
    private static func problem(with status: FileStatus) -> String? {
        if status.kind == .symbolicLink { return "a symbolic link" }
        if status.kind == .directory { return "a directory" }
        if status.kind != .regular { return "not a regular file" }
        if status.owner != geteuid() { return "another user's file" }
        if status.linkCount != 1 { return "a file with another link to it" }
        return nil
    }

    /// The length of the partial file, with the position at its end.
    func seekToEnd() throws -> Int64 {
        Int64(clamping: try handle.seekToEnd())
    }

    /// The record kept beside the partial file, when there is a well-formed one for `request` (a
    /// ``DownloadResumeRecord/digest(method:url:)``); `nil` for none, or one that cannot be trusted.
    func record(for request: String) -> DownloadResumeRecord? {
        guard let recordPath else { return nil }
        let descriptor = open(recordPath, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        let file = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        guard case .success(let status) = FileStatus.of(descriptor: descriptor), Self.problem(with: status) == nil,
            let data = try? file.read(upToCount: DownloadResumeRecord.maximumSize + 1)
        else { return nil }
        return DownloadResumeRecord.decode(data, for: request)
    }

    /// Keeps the partial file when the download does not complete: it holds part of the version its record names.
    func keep() {
        keepsPartial = recordPath != nil
    }

    /// Says which version the (empty) file now holds, for a resumable download: `record` is written in place of
    /// the old one, so that the partial file is kept for a later call; `nil` (a version without a validator, which
    /// cannot be resumed) removes the record, and the partial file goes when the download does not complete.
    func begin(_ record: DownloadResumeRecord?) throws {
        guard let recordPath else { return }
        guard let record else {
            keepsPartial = false
            _ = unlink(recordPath)
            return
        }
        let temporary = "\(recordPath).\(UUID().uuidString)"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw Self.refusal("the resumable download's record could not be written: \(SystemError(code: errno))")
        }
        let file = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        do {
            try file.write(contentsOf: record.encoded)
            try file.synchronize()
            try file.close()
            guard rename(temporary, recordPath) == 0 else { throw SystemError(code: errno) }
        } catch {
            _ = unlink(temporary)
            throw error
        }
        keepsPartial = true
    }

    deinit { discard() }

    /// `.<name>.<UUID>.download`, with as much of `name` as keeps it within the 255 bytes a file name may have
    /// (a destination named with all 255 would otherwise be refused for its temporary file's name).
    static func temporaryName(for name: String) -> String {
        ".\(shortened(name)).\(UUID().uuidString).download"
    }

    /// The first 200 bytes' worth of whole characters of `name`: room for Courier's prefix and suffixes within the
    /// 255 bytes a file name may have.
    static func shortened(_ name: String) -> String {
        var kept = ""
        var bytes = 0
        for character in name {
            bytes += character.utf8.count
            if bytes > 200 { break }
            kept.append(character)
        }
        return kept
    }

    func write(_ data: Data) throws {
        try handle.write(contentsOf: data)
    }

    /// Cuts the file to `length` bytes, with the position there: 0 for a body that starts the download again.
    func truncate(to length: Int64 = 0) throws {
        try handle.truncate(atOffset: UInt64(max(0, length)))
    }

    /// Called after the last check of the destination and before the file takes its name: the tests' way into
    /// that window, to change what is at the destination as another process could.
    @TaskLocal static var beforePlacing: (@Sendable (URL) -> Void)?

    /// Flushes the file to disk and puts it at `destination` (``FilePlacement``), after checking again that the
    /// destination is not something else now (a directory made meanwhile, say); a resumable download's record goes
    /// with it.
    func moveIntoPlace(at destination: URL) throws {
        try handle.synchronize()
        try Self.checkDestination(destination)
        Self.beforePlacing?(destination)
        let partial = path
        if recordPath != nil {
            // A resumable download's partial file leaves its name first, for a name only this download knows: the
            // file the placement displaces lands at the name it leaves, where another download to the destination
            // could otherwise take it up as a partial file of the version the record names.
            let directory = destination.deletingLastPathComponent()
            let moved = directory.appendingPathComponent(Self.temporaryName(for: destination.lastPathComponent)).path
            guard rename(path, moved) == 0 else { throw Self.placementFailure(destination, SystemError(code: errno)) }
            path = moved
        }
        let failure: any Error
        switch FilePlacement.place(path, at: destination.path) {
        case .success:
            isDone = true
            if let recordPath { _ = unlink(recordPath) }
            // Closing releases a resumable download's lock, after the rename.
            try? handle.close()
            return
        case .failure(.occupied(let kind, restored: true)):
            failure = Self.refusal(
                "the download's destination \(destination.path) became \(kind.description) while the body arrived; "
                    + "it is left as it is"
            )
        case .failure(.occupied(let kind, restored: false)):
            // What was at the destination is at this file's name now, and is not this download's to remove.
            isDone = true
            throw Self.refusal(
                "the download's destination \(destination.path) became \(kind.description) while the body arrived, "
                    + "and another process changed the name again while it was being put back: it is at \(path)"
            )
        case .failure(.system(let error)):
            failure = Self.placementFailure(destination, error)
        }
        // A resumable download's whole body goes back to the partial file's name, with its record, for the next
        // call to finish (it asks for the last byte again); if that name was taken meanwhile, it is discarded.
        if recordPath != nil {
            if FilePlacement.moveIfFree(path, to: partial) { path = partial } else { keepsPartial = false }
        }
        throw failure
    }

    private static func placementFailure(_ destination: URL, _ error: SystemError) -> CocoaError {
        CocoaError(
            .fileWriteUnknown,
            userInfo: [
                NSFilePathErrorKey: destination.path,
                NSLocalizedFailureReasonErrorKey: "the download could not be moved into place: \(error)",
                NSUnderlyingErrorKey: POSIXError(POSIXErrorCode(rawValue: error.code) ?? .EIO),
            ]
        )
    }

    /// Closes the file and removes it, unless it was moved into place or is a resumable download's partial file
    /// to keep; safe to call more than once.
    func discard() {
        guard !isDone else { return }
        isDone = true
        if !keepsPartial {
            _ = unlink(path)
            if let recordPath { _ = unlink(recordPath) }
        }
        try? handle.close()
    }

    private static func refusal(_ message: String, _ underlying: SystemError? = nil) -> CourierError {
        CourierError(.invalidRequest, message: message, underlying: underlying)
    }
}
