import Testing

@testable import Courier

@Suite("ClientLifecycle.Registry")
struct ClientLifecycleRegistryTests {
    private typealias Registry = ClientLifecycle.Registry<String>

    @Test("requests tracked before a shutdown cancels are handed back by cancelAll, those that ended are not")
    func cancelAllReturnsRunning() {
        var registry = Registry()
        let first = registry.track("first")
        let second = registry.track("second")
        let ended = registry.track("ended")
        #expect(first.cancelNow == false)
        #expect(Set([first.id, second.id, ended.id]).count == 3)
        registry.untrack(ended.id)

        #expect(registry.cancelAll().sorted() == ["first", "second"])
        #expect(registry.isCancelling)
    }

    @Test("a request that starts after cancelAll is to be cancelled at once")
    func startAfterCancelling() {
        var registry = Registry()
        #expect(registry.cancelAll().isEmpty)
        let late = registry.track("late")
        #expect(late.cancelNow)
        #expect(registry.cancelAll() == ["late"])
    }
}
