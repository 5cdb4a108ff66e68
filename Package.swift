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
        )
    ],
    dependencies: [
        // Resolved and fetched only when the AsyncHTTPClient trait is enabled (no default traits).
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.100.0"),
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
            ],
            swiftSettings: upcomingFeatures
        ),
        .testTarget(
            name: "CourierTestingTests",
            dependencies: ["Courier", "CourierTesting"],
            swiftSettings: upcomingFeatures
        ),
    ],
    swiftLanguageModes: [.v6]
)
