#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Bionic)
import Bionic
#endif

/// A file open for reading, by its descriptor: no buffering beyond the caller's buffer, and closed exactly
/// once, by ``close()`` or when dropped.
final class FileReader {
    private var descriptor: Int32

    /// Opens the regular file at `path`, through any symbolic links to it. `O_NONBLOCK` keeps a FIFO put there
    /// since the request was built from blocking the open (it changes nothing for a regular file), and the check
    /// on the open descriptor refuses it, as it refuses another file than `identity` (one renamed over the path,
    /// a Secret mount's `..data` swapped): its bytes are not the body's.
    init(path: String, expecting identity: FileIdentity) throws {
        descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            throw UploadError("\(path) could not be opened: \(String(cString: strerror(errno)))")
        }
        if case .success(let status) = FileStatus.of(descriptor: descriptor) {
            if status.kind != .regular {
                close()
                throw UploadError("\(path) is now \(status.kind.description), not a regular file")
            }
            if status.fileIdentity != identity {
                close()
                throw UploadError(
                    "\(path) was replaced by another file since the request was built: no part of it is sent as the body"
                )
            }
        }
    }

    deinit { close() }

    /// Reads at most `buffer.count` bytes; 0 at the end of the file.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        precondition(descriptor >= 0, "read from a closed file")
        while true {
            let count = systemRead(descriptor, buffer.baseAddress, buffer.count)
            if count >= 0 { return count }
            guard errno == EINTR else {
                throw UploadError("a file could not be read: \(String(cString: strerror(errno)))")
            }
        }
    }

    func close() {
        guard descriptor >= 0 else { return }
        _ = systemClose(descriptor)
        descriptor = -1
    }
}

// The C library's `read` and `close`, out of reach of the methods of the same names.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}

private func systemClose(_ descriptor: Int32) -> Int32 {
    close(descriptor)
}
