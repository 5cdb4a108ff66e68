#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Bionic)
import Bionic
#endif

/// What is at a path, as `stat(2)` (through symbolic links) or `lstat(2)` (the link itself) sees it: its kind and
/// size. Uploads read a file through any links to it; downloads look at the destination itself.
struct FileStatus {
    /// The kind of file at a path.
    enum Kind: Equatable {
        case regular, directory, symbolicLink, fifo, socket, characterDevice, blockDevice, other

        /// The kind in words, for errors: "a directory".
        var description: String {
            switch self {
            case .regular: "a regular file"
            case .directory: "a directory"
            case .symbolicLink: "a symbolic link"
            case .fifo: "a FIFO"
            case .socket: "a socket"
            case .characterDevice: "a character device"
            case .blockDevice: "a block device"
            case .other: "not a regular file"
            }
        }
    }

    let kind: Kind
    let size: Int64
    /// The device and inode: the file's identity, the same through every name and descriptor of it.
    let identity: (device: UInt64, inode: UInt64)
    /// The user that owns it.
    let owner: uid_t
    /// How many names (hard links) it has.
    let linkCount: UInt64

    /// The status of what `path` names, following symbolic links (`stat`) or not (`lstat`); the C library's error
    /// number when there is none (`ENOENT`, `ELOOP`, `ENOTDIR`, `EACCES`).
    static func of(_ path: String, followingLinks: Bool) -> Result<FileStatus, SystemError> {
        var info = stat()
        let result = followingLinks ? stat(path, &info) : lstat(path, &info)
        guard result == 0 else { return .failure(SystemError(code: errno)) }
        return .success(FileStatus(info))
    }

    /// The status of an open file (`fstat`).
    static func of(descriptor: Int32) -> Result<FileStatus, SystemError> {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return .failure(SystemError(code: errno)) }
        return .success(FileStatus(info))
    }

    // Only here does Courier read a `stat` directly: this file does not import Foundation, so `stat` is the C
    // library's whatever else a build links (with the Postgres trait, Foundation's CoreFoundation made the name
    // ambiguous in a file that imports both).
    private init(_ info: stat) {
        switch info.st_mode & S_IFMT {
        case S_IFREG: kind = .regular
        case S_IFDIR: kind = .directory
        case S_IFLNK: kind = .symbolicLink
        case S_IFIFO: kind = .fifo
        case S_IFSOCK: kind = .socket
        case S_IFCHR: kind = .characterDevice
        case S_IFBLK: kind = .blockDevice
        default: kind = .other
        }
        size = Int64(info.st_size)
        identity = (UInt64(info.st_dev), UInt64(info.st_ino))
        owner = info.st_uid
        linkCount = UInt64(info.st_nlink)
    }

    /// The device and inode as a value.
    var fileIdentity: FileIdentity { FileIdentity(device: identity.device, inode: identity.inode) }

    /// The status of the regular file at `path`, following symbolic links (a Kubernetes Secret or ConfigMap mount
    /// is a link to `..data/key`, and `..data` a link to the directory of the current version); an
    /// ``UploadError`` that says what is there instead: nothing, a dangling link, a loop of links, a directory, a
    /// FIFO (which would block the reader), a device.
    static func regularFile(atPath path: String) throws -> FileStatus {
        switch of(path, followingLinks: true) {
        case .success(let status):
            guard status.kind == .regular else {
                throw UploadError("\(path) is \(status.kind.description), not a regular file")
            }
            return status
        case .failure(let error):
            if error.code == ENOENT, case .success(let link) = of(path, followingLinks: false),
                link.kind == .symbolicLink
            {
                throw UploadError("\(path) is a symbolic link to nothing: its target does not exist")
            }
            if error.code == ELOOP {
                throw UploadError("\(path) could not be resolved: too many levels of symbolic links")
            }
            throw UploadError("\(path) does not exist or cannot be read: \(error)")
        }
    }
}

/// A file's device and inode: the same through every name and descriptor of it, another for a file renamed over it.
struct FileIdentity: Sendable, Equatable {
    let device: UInt64
    let inode: UInt64
}

/// An error number from the C library, described by `strerror`.
struct SystemError: Error, CustomStringConvertible {
    let code: Int32

    var description: String { String(cString: strerror(code)) }
}
