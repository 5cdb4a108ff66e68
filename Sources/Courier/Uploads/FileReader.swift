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

    init(path: String) throws {
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw UploadError("\(path) could not be opened: \(String(cString: strerror(errno)))")
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
