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
    /// on the open descriptor refuses it.
    init(path: String) throws {
        descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            throw UploadError("\(path) could not be opened: \(String(cString: strerror(errno)))")
        }
        if case .success(let status) = FileStatus.of(descriptor: descriptor), status.kind != .regular {
            close()
            throw UploadError("\(path) is now \(status.kind.description), not a regular file")
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
