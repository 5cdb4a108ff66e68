// swift-tools-version:6.1
//
// End-to-end tests for Courier against a real HTTP server on loopback.
//
// This is a separate package so that the root Courier package stays free of dependencies: only
// these tests pull in Hummingbird, and AsyncHTTPClient through Courier's trait.

import PackageDescription

/// What both Hummingbird servers (the test server and the fan-out example) link.
let hummingbirdServer: [Target.Dependency] = [
    .product(name: "Hummingbird", package: "hummingbird"),
    .product(name: "HTTPTypes", package: "swift-http-types"),
    .product(name: "Logging", package: "swift-log"),
    .product(name: "NIOCore", package: "swift-nio"),
    .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
]

let package = Package(
    name: "IntegrationTests",
    // Courier's own minimum.
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "TestServer", targets: ["TestServer"]),
        .library(name: "FanOutService", targets: ["FanOutService"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        // Already in the graph through Courier's AsyncHTTPClient trait; the end-to-end tests configure its
        // connection pool.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // Already in the graph through Hummingbird; named here because the server and the raw-socket
        // tests import these modules directly.
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // The runtime of the generated OpenAPI client (OpenAPIExample); already in the graph through Courier's
        // OpenAPI trait.
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        // Courier itself, by path, with AsyncHTTPClientTransport, OpenAPIClientTransport and Client's Service
        // conformance switched on. The name is given because a path dependency is otherwise known by its
        // directory's name, which differs between checkouts.
        .package(name: "courier", path: "../", traits: ["AsyncHTTPClient", "OpenAPI", "ServiceLifecycle"]),
    ],
    targets: [
        .target(name: "TestServer", dependencies: hummingbirdServer),
        // A server-side example: a Hummingbird service that fans out to an upstream through Courier.
        .target(
            name: "FanOutService",
            dependencies: [.product(name: "Courier", package: "courier")] + hummingbirdServer
        ),
        // A client generated once by swift-openapi-generator from openapi.yaml, committed (see its README.md).
        .target(
            name: "OpenAPIExample",
            dependencies: [
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            exclude: ["openapi.yaml", "openapi-generator-config.yaml", "README.md"]
        ),
        // A child process for the end-to-end tests: a resumable download that a test kills mid-body (SIGKILL), to
        // resume it in another process.
        .executableTarget(
            name: "DownloadResumer",
            dependencies: [.product(name: "Courier", package: "courier")]
        ),
        // A child process for the end-to-end tests: a streamed response read in a process of its own, whose peak
        // memory is the client's alone.
        .executableTarget(
            name: "StreamReader",
            dependencies: ["TestServer", .product(name: "Courier", package: "courier")]
        ),
        .testTarget(
            name: "TestServerTests",
            dependencies: ["TestServer"] + ["NIOCore", "NIOPosix"].map { .product(name: $0, package: "swift-nio") }
        ),
        .testTarget(
            name: "CourierEndToEndTests",
            dependencies: [
                "TestServer",
                "FanOutService",
                "OpenAPIExample",
                .product(name: "Courier", package: "courier"),
                .product(name: "CourierTesting", package: "courier"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// As in Courier's own manifest: `any` spelled out, only imported modules visible, `public import` for API exposure.
for target in package.targets {
    target.swiftSettings = ["ExistentialAny", "MemberImportVisibility", "InternalImportsByDefault"].map {
        .enableUpcomingFeature($0)
    }
}
// The generated client's `public import`s that a file does not use warn up to Swift 6.3 (the generator silences
// them with `@diagnose`, which Swift 6.4 brings); the code is the generator's, so its warnings are not shown.
for target in package.targets where target.name == "OpenAPIExample" {
    target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-suppress-warnings"])]
}
