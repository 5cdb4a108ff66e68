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

// The C library's `read` and `close`, named apart from the methods above.
#if canImport(Glibc)
private let systemRead = Glibc.read
private let systemClose = Glibc.close
#elseif canImport(Musl)
private let systemRead = Musl.read
private let systemClose = Musl.close
#elseif canImport(Darwin)
private let systemRead = Darwin.read
private let systemClose = Darwin.close
#elseif canImport(Bionic)
private let systemRead = Bionic.read
private let systemClose = Bionic.close
#endif
