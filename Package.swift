// swift-tools-version:6.1
import PackageDescription

let upcomingFeatures: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

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
        .default(enabledTraits: []),
    ],
    dependencies: [
        // Each is resolved and fetched only when a trait that uses it is enabled (no trait is on by default).
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.100.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
    ],
    targets: [
        .target(
            name: "Courier",
            dependencies: [
                .product(
                    name: "AsyncHTTPClient",
                    package: "async-http-client",
                    condition: .when(traits: ["AsyncHTTPClient"])
                ),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Logging"])),
                .product(name: "Metrics", package: "swift-metrics", condition: .when(traits: ["Metrics"])),
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: .when(traits: ["Tracing"])),
            ],
            swiftSettings: upcomingFeatures
        ),
        .target(
            name: "CourierTesting",
            dependencies: ["Courier"],
            swiftSettings: upcomingFeatures
        ),
        .testTarget(
            name: "CourierTests",
            dependencies: [
                "Courier",
                "CourierTesting",
                .product(
                    name: "AsyncHTTPClient",
                    package: "async-http-client",
                    condition: .when(traits: ["AsyncHTTPClient"])
                ),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["AsyncHTTPClient"])),
                .product(name: "InMemoryLogging", package: "swift-log", condition: .when(traits: ["Logging"])),
                .product(name: "MetricsTestKit", package: "swift-metrics", condition: .when(traits: ["Metrics"])),
                .product(
                    name: "InMemoryTracing",
                    package: "swift-distributed-tracing",
                    condition: .when(traits: ["Tracing"])
                ),
            ],
            swiftSettings: upcomingFeatures
        ),
        .testTarget(
            name: "CourierTestingTests",
            dependencies: ["Courier", "CourierTesting"],
            // Examples/TestingExample.swift links to the snippet, whose app code the tests check; the flag
            // leaves out the snippet's top-level program.
            swiftSettings: upcomingFeatures + [.define("COURIER_TESTING_EXAMPLE_TESTS")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
