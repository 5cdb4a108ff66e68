#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Bionic)
import Bionic
#endif

/// Puts a finished file at its destination's name so that what it replaces is always a regular file, also when
/// something else appears at the name between a check and the rename (a symbolic link someone swapped in, a
/// directory made meanwhile).
///
/// A plain `rename(2)` replaces whatever non-directory is at the name, a symbolic link included: the link would be
/// gone, though a download promises to neither follow nor replace one. So the file takes a free name only while it
/// is free (`RENAME_NOREPLACE`), and an occupied one by exchanging the two atomically (`RENAME_EXCHANGE`; Darwin's
/// `RENAME_EXCL` and `RENAME_SWAP`), then looks at what it displaced: a regular file is removed, as a rename would
/// have removed it; anything else is exchanged back and refused. A reader of the name sees the old file or the new
/// one, never neither; a link or directory is at its place again once the refusal returns.
///
/// Where the system offers neither (glibc before 2.28, a statically linked musl, which cannot look the function
/// up, a platform other than Linux, Android and Darwin), or the file system refuses the flags (NFS, some FUSE file
/// systems), the file gets the plain rename after the check its caller made, and a link swapped in between the two
/// is replaced, as before.
enum FilePlacement {
    /// Why a file was not placed.
    enum Failure: Error {
        /// Something other than a regular file is at the destination. `restored`: it is where it was, and the file
        /// at `source` again; otherwise (the destination's name was taken or freed by another process while it
        /// was being put back) it is at `source`'s name, which must not be removed.
        case occupied(FileStatus.Kind, restored: Bool)
        /// The system refused the rename; `source` is as it was.
        case system(SystemError)
    }

    /// Renames `source` to `destination` (in one directory: a rename never copies), replacing only a regular file.
    static func place(_ source: String, at destination: String) -> Result<Void, Failure> {
        // Bounded: each round ends unless the name changes hands between two system calls.
        for _ in 0..<4 {
            switch renaming(source, destination, .noReplace) {
            case 0: return .success(())
            case EEXIST: break
            case let code where unsupported(code): return plainRename(source, destination)
            case let code: return .failure(.system(SystemError(code: code)))
            }
            switch renaming(source, destination, .exchange) {
            case 0: return keepOrPutBack(displaced: source, destination: destination)
            // The name was freed meanwhile: take it again while it is free.
            case ENOENT: continue
            case let code where unsupported(code): return plainRename(source, destination)
            case let code: return .failure(.system(SystemError(code: code)))
            }
        }
        return .failure(.system(SystemError(code: EAGAIN)))
    }

    /// Renames `source` to `destination` only if nothing is there; `false` when something is, or the rename
    /// failed. Where the system cannot rename with a flag, it looks first: a name taken in between is replaced.
    static func moveIfFree(_ source: String, to destination: String) -> Bool {
        let code = renaming(source, destination, .noReplace)
        guard unsupported(code) else { return code == 0 }
        guard case .failure(let error) = FileStatus.of(destination, followingLinks: false), error.code == ENOENT
        else { return false }
        return rename(source, destination) == 0
    }

    /// Called after an exchange, before what it displaced is looked at: the tests' way into that window.
    @TaskLocal static var afterExchange: (@Sendable (_ destination: String) -> Void)?

    /// After an exchange: `displaced` holds what was at `destination`. A regular file is removed; anything else
    /// goes back where it was.
    private static func keepOrPutBack(displaced: String, destination: String) -> Result<Void, Failure> {
        afterExchange?(destination)
        let kind: FileStatus.Kind
        switch FileStatus.of(displaced, followingLinks: false) {
        case .success(let status): kind = status.kind
        case .failure: kind = .other
        }
        if kind == .regular {
            _ = unlink(displaced)
            return .success(())
        }
        switch renaming(displaced, destination, .exchange) {
        case 0:
            return .failure(.occupied(kind, restored: true))
        case ENOENT:
            // Another process took the file away from the destination's name meanwhile: what was there goes back
            // if the name is still free.
            return .failure(.occupied(kind, restored: moveIfFree(displaced, to: destination)))
        default:
            return .failure(.occupied(kind, restored: false))
        }
    }

    private static func plainRename(_ source: String, _ destination: String) -> Result<Void, Failure> {
        rename(source, destination) == 0 ? .success(()) : .failure(.system(SystemError(code: errno)))
    }

    /// Error numbers that say the system or file system cannot rename with a flag.
    private static func unsupported(_ code: Int32) -> Bool {
        code == EINVAL || code == ENOSYS || code == ENOTSUP || code == EOPNOTSUPP
    }

    private enum Mode {
        /// Fails with `EEXIST` when the destination exists.
        case noReplace
        /// Exchanges source and destination, both of which must exist (`ENOENT` otherwise).
        case exchange
    }

    /// A rename with `mode`: 0, or the error number (`ENOSYS` where the system has no such rename).
    private static func renaming(_ source: String, _ destination: String, _ mode: Mode) -> Int32 {
        #if canImport(Darwin)
        let flags = mode == .noReplace ? UInt32(RENAME_EXCL) : UInt32(RENAME_SWAP)
        return renamex_np(source, destination, flags) == 0 ? 0 : errno
        #elseif os(Linux) || os(Android)
        // `renameat2` (Linux 3.15, glibc 2.28) is declared only for _GNU_SOURCE, which Swift's C modules do not set:
        // it is looked up by name, with its C signature.
        typealias RenameAt2 =
            @convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32
        // The program's own handle: its global scope, where the C library is (a null handle means that only
        // where RTLD_DEFAULT is null).
        guard let program = dlopen(nil, RTLD_LAZY) else { return ENOSYS }
        defer { dlclose(program) }
        guard let symbol = dlsym(program, "renameat2") else { return ENOSYS }
        let renameat2 = unsafeBitCast(symbol, to: RenameAt2.self)
        // RENAME_NOREPLACE and RENAME_EXCHANGE of <linux/fs.h>.
        let flags: UInt32 = mode == .noReplace ? 1 : 2
        return renameat2(AT_FDCWD, source, AT_FDCWD, destination, flags) == 0 ? 0 : errno
        #else
        return ENOSYS
        #endif
    }
}
