#if AsyncHTTPClient
import AsyncHTTPClient
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transport enforces a call's ``Deadline`` itself, from the first byte sent to the last byte of the body
/// (AsyncHTTPClient's delegate API bounds the whole exchange by it, see `collectThroughDelegate`): a timeout
/// above it then needs no child task of its own (see `DeadlineEnforcingTransport`).
extension AsyncHTTPClientTransport: DeadlineEnforcingTransport {
    /// AsyncHTTPClient takes a wall-clock deadline, so a deadline on a clock that runs in real time.
    func enforces(_ deadline: Deadline) -> Bool {
        deadline.isRealTime
    }
}
#endif
