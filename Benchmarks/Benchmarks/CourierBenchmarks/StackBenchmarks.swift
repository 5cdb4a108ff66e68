import Benchmark
import BenchmarkSupport
import Courier

/// (4) the timeout and retry layers alone, (5) the default stack, over the in-memory transport; and the timeout
/// and the stack again over a transport that suspends once per call, the path a request over a socket takes
/// (over the plain in-memory transport a timeout never needs to register its deadline).
func registerStackBenchmarks() {
    let transport: any Transport = InMemoryTransport()
    let direct = callingDirectly(transport)
    let bare = sending(through: Client(transport: transport))
    let timeout = sending(through: Client(transport: transport, middleware: [.timeout(.seconds(10))]))
    let retry = sending(through: Client(transport: transport, middleware: [.retry(.default)]))
    let logging = sending(through: Client(transport: transport, middleware: [DefaultStack.logging()]))
    let stack = sending(
        through: Client(baseURL: Fixtures.url, transport: transport, middleware: DefaultStack.middleware())
    )

    PerRequest.register("Client.send, timeout layer", timeout)
    PerRequest.register("Client.send, retry layer (success)", retry)
    PerRequest.register("Client.send, logging layer (records dropped)", logging)
    PerRequest.register("Client.send, default stack", stack)

    Paired.register("Paired: timeout layer vs 0 layers", calls: 1_000, baseline: bare, candidate: timeout)
    Paired.register("Paired: retry layer (success) vs 0 layers", calls: 1_000, baseline: bare, candidate: retry)
    Paired.register("Paired: logging layer vs 0 layers", calls: 1_000, baseline: bare, candidate: logging)
    Paired.register("Paired: default stack vs Transport.send", calls: 1_000, baseline: direct, candidate: stack)

    let suspending: any Transport = SuspendingTransport()
    let suspendingDirect = callingDirectly(suspending)
    let suspendingBare = sending(through: Client(transport: suspending))
    let suspendingTimeout = sending(through: Client(transport: suspending, middleware: [.timeout(.seconds(10))]))
    let suspendingStack = sending(
        through: Client(baseURL: Fixtures.url, transport: suspending, middleware: DefaultStack.middleware())
    )
    PerRequest.register("Client.send, timeout layer, transport that suspends", suspendingTimeout)
    PerRequest.register("Client.send, default stack, transport that suspends", suspendingStack)
    Paired.register(
        "Paired: timeout layer vs 0 layers, transport that suspends",
        calls: 1_000,
        baseline: suspendingBare,
        candidate: suspendingTimeout
    )
    Paired.register(
        "Paired: default stack vs Transport.send, transport that suspends",
        calls: 1_000,
        baseline: suspendingDirect,
        candidate: suspendingStack
    )
}
