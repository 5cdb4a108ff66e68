#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Bionic)
import Bionic
#endif

/// A value guarded by a `pthread_mutex_t`, used for every piece of shared state in Courier and CourierTesting.
///
/// Why not `Synchronization.Mutex`: on Linux (Swift 6.3.1) its contended path runs inside
/// `libswiftSynchronization`, which the thread sanitizer does not instrument, so `swift test --sanitize=thread`
/// reports races between two critical sections of the same mutex that cannot happen. The sanitizer
/// intercepts `pthread_mutex_lock`, so this lock keeps the sanitized test run meaningful. The uncontended cost
/// is about the same.
///
/// The API mirrors `Mutex.withLock`, including `sending`, so it is exactly as strict about what may cross
/// into and out of the critical section.
package final class LockedState<Value: ~Copyable>: @unchecked Sendable {
    // @unchecked Sendable: `value` is only ever touched inside `withLock`, under `mutex`.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    /// Creates a lock guarding `value`.
    package init(_ value: consuming sending Value) {
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        // `pthread_mutex_init` initializes the (trivial) memory; `pthread_mutex_t()` is not used because with
        // CoreFoundation in the module graph (the HTTPTypes trait) its initializer belongs to that module.
        let status = pthread_mutex_init(mutex, nil)
        precondition(status == 0, "pthread_mutex_init failed with \(status)")
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    package func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
