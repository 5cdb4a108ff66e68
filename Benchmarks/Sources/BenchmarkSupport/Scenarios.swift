import Courier

/// Every in-memory scenario, by name: what the benchmarks time and what `InstructionCounts` counts.
public enum Scenarios {
    /// The scenarios, in the order they are listed.
    public static func all() -> [(name: String, calls: Calls)] {
        let transport: any Transport = InMemoryTransport()
        let suspending: any Transport = SuspendingTransport()
        return [
            ("direct", callingDirectly(transport)),
            ("client0", sending(through: Client(transport: transport))),
            ("pass1", sending(through: Client(transport: transport, middleware: Fixtures.passThrough(1)))),
            ("pass10", sending(through: Client(transport: transport, middleware: Fixtures.passThrough(10)))),
            ("header1", sending(through: Client(transport: transport, middleware: Fixtures.headerSetting(1)))),
            ("header10", sending(through: Client(transport: transport, middleware: Fixtures.headerSetting(10)))),
            ("timeout", sending(through: Client(transport: transport, middleware: [.timeout(.seconds(10))]))),
            ("retry", sending(through: Client(transport: transport, middleware: [.retry(.default)]))),
            ("logging", sending(through: Client(transport: transport, middleware: [DefaultStack.logging()]))),
            (
                "timeout2",
                sending(
                    through: Client(transport: transport, middleware: [.timeout(.seconds(10)), .timeout(.seconds(2))])
                )
            ),
            (
                "timeoutRetryTimeout",
                sending(
                    through: Client(
                        transport: transport,
                        middleware: [.timeout(.seconds(10)), .retry(.default), .timeout(.seconds(2))]
                    )
                )
            ),
            (
                "auth",
                sending(
                    through: Client(
                        baseURL: Fixtures.url,
                        transport: transport,
                        middleware: [.authenticating(token: DefaultStack.token)]
                    )
                )
            ),
            ("validation", sending(through: Client(transport: transport, middleware: [.validatingStatus()]))),
            (
                "stack",
                sending(
                    through: Client(baseURL: Fixtures.url, transport: transport, middleware: DefaultStack.middleware())
                )
            ),
            // The same over a transport that suspends once per call: the path a socket takes.
            ("suspendingDirect", callingDirectly(suspending)),
            ("suspending0", sending(through: Client(transport: suspending))),
            (
                "suspendingTimeout",
                sending(through: Client(transport: suspending, middleware: [.timeout(.seconds(10))]))
            ),
            (
                "suspendingStack",
                sending(
                    through: Client(baseURL: Fixtures.url, transport: suspending, middleware: DefaultStack.middleware())
                )
            ),
            // A typed `Request`, without and with a per-request timeout (`Request.timeout`), in memory and over the
            // suspending transport (where the call outlives its first step, so a timer per call would be armed).
            ("typed0", sendingTyped(through: Client(transport: transport), timeout: nil)),
            ("typedTimeout", sendingTyped(through: Client(transport: transport), timeout: .seconds(10))),
            // A path joined to the client's base URL, as the README's requests are written.
            (
                "typedPath0",
                sendingTyped(
                    through: Client(baseURL: Fixtures.baseURL, transport: transport),
                    to: .path("/users/42"),
                    timeout: nil
                )
            ),
            ("suspendingTyped0", sendingTyped(through: Client(transport: suspending), timeout: nil)),
            ("suspendingTypedTimeout", sendingTyped(through: Client(transport: suspending), timeout: .seconds(10))),
            ("openapiDirect", OpenAPIPeer.callingDirectly()),
            ("openapi0", OpenAPIPeer.sending(layers: 0)),
            ("openapi1", OpenAPIPeer.sending(layers: 1)),
            ("openapi10", OpenAPIPeer.sending(layers: 10)),
        ]
    }
}
