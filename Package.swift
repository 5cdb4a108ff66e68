// swift-tools-version:6.1
import PackageDescription

/// The optional integrations: the trait that switches each on, its package, and the products Courier and its tests
/// then link. A package is resolved and fetched only when a trait that uses it is on, and none is by default, so a
/// default build depends on nothing.
typealias Integration = (trait: String, package: String, library: [String], tests: [String])
let integrations: [Integration] = [
    ("AsyncHTTPClient", "async-http-client", library: ["AsyncHTTPClient"], tests: ["AsyncHTTPClient"]),
    ("AsyncHTTPClient", "swift-nio", library: ["NIOCore", "NIOHTTP1", "NIOPosix"], tests: ["NIOHTTP1"]),
    // The decompression limit of the transport's default configuration, and the error its tests expect.
    ("AsyncHTTPClient", "swift-nio-extras", library: ["NIOHTTPCompression"], tests: ["NIOHTTPCompression"]),
    ("Logging", "swift-log", library: ["Logging"], tests: ["InMemoryLogging"]),
    ("Metrics", "swift-metrics", library: ["Metrics"], tests: ["MetricsTestKit"]),
    ("Tracing", "swift-distributed-tracing", library: ["Tracing"], tests: ["InMemoryTracing"]),
    ("HTTPTypes", "swift-http-types", library: ["HTTPTypes"], tests: []),
    ("OpenAPI", "swift-openapi-runtime", library: ["OpenAPIRuntime"], tests: []),
    ("ServiceLifecycle", "swift-service-lifecycle", library: ["ServiceLifecycle"], tests: ["ServiceLifecycleTestKit"]),
    // The shared stores of a fleet of replicas (the Fleet article); the tests reach the server with it too.
    ("Postgres", "postgres-nio", library: ["PostgresNIO"], tests: ["PostgresNIO"]),
    // AES-GCM: PostgresSharedTokenStore seals the tokens it stores (postgres-nio depends on it too).
    ("Postgres", "swift-crypto", library: ["Crypto"], tests: []),
]

/// The products `names` picks from each integration, each linked only when its trait is on.
func traitGated(_ names: (Integration) -> [String]) -> [Target.Dependency] {
    integrations.flatMap { integration in
        names(integration).map {
            .product(name: $0, package: integration.package, condition: .when(traits: [integration.trait]))
        }
    }
}

let package = Package(
    name: "courier",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Courier", targets: ["Courier"]),
        .library(name: "CourierTesting", targets: ["CourierTesting"]),
    ],
    traits: [
        .trait(
            name: "AsyncHTTPClient",
            description: "Adds AsyncHTTPClientTransport, which sends requests with swift-server/async-http-client."
        ),
        // Observability integrations (see the Observability article).
        .trait(name: "Logging", description: "`.logging(logger:)`: request logs through swift-log."),
        .trait(name: "Metrics", description: "`.metrics(...)`: request metrics through swift-metrics."),
        .trait(name: "Tracing", description: "`.tracing()`: client spans through swift-distributed-tracing."),
        // Ecosystem integrations.
        .trait(
            name: "HTTPTypes",
            description: "Conversions between URLRequest/HTTPURLResponse/HTTPHeaders and apple/swift-http-types."
        ),
        .trait(
            name: "OpenAPI",
            description: "OpenAPIClientTransport: a swift-openapi-generator client sends through a Courier Client.",
            enabledTraits: ["HTTPTypes"]
        ),
        .trait(
            name: "ServiceLifecycle",
            description: "ClientService: a Client's graceful shutdown as a swift-service-lifecycle Service."
        ),
        .trait(
            name: "Postgres",
            description:
                "PostgreSQL stores for a fleet of replicas (vapor/postgres-nio): one token refresh, its tokens sealed "
                + "with AES-GCM (apple/swift-crypto), one quota and one cache."
        ),
        .default(enabledTraits: []),
    ],
    dependencies: [
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.100.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.26.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        .target(name: "Courier", dependencies: traitGated(\.library)),
        .target(name: "CourierTesting", dependencies: ["Courier"]),
        .testTarget(name: "CourierTests", dependencies: ["Courier", "CourierTesting"] + traitGated(\.tests)),
        .testTarget(
            name: "CourierTestingTests",
            dependencies: ["Courier", "CourierTesting"],
            // Examples/TestingExample.swift links to the snippet, whose app code the tests check; the flag
            // leaves out the snippet's top-level program.
            swiftSettings: [.define("COURIER_TESTING_EXAMPLE_TESTS")]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// Every target spells out `any`, sees only the modules it imports, and marks API exposure with `public import`.
for target in package.targets {
    target.swiftSettings =
        (target.swiftSettings ?? [])
        + ["ExistentialAny", "MemberImportVisibility", "InternalImportsByDefault"].map {
            .enableUpcomingFeature($0)
        }
}

// The documentation: the README's command sets COURIER_DOCS=1, which adds the DocC plugin (swift package
// generate-documentation, with the Snippets rendered in the articles). Without it the package depends on nothing.
if Context.environment["COURIER_DOCS"] == "1" {
    package.dependencies.append(.package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"))
}
