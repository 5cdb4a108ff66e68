// swift-tools-version:6.1
//
// Courier's benchmarks: the cost of the middleware chain over an in-memory transport, the same chain in
// swift-openapi-runtime's client (the nearest peer), and Courier end to end on loopback against the bare
// URLSession and AsyncHTTPClient.
//
// A separate package, so that the root Courier package stays free of dependencies. Run from this folder:
//
//     swift package --disable-sandbox benchmark
//
// See RESULTS.md for the figures and how they were measured.

import PackageDescription

/// What the scenarios run on, linked by the shared support target and the benchmarks alike: Courier, the
/// OpenAPI runtime it is compared with, and the loopback transports.
let scenarios: [Target.Dependency] =
    [
        .product(name: "Courier", package: "courier"),
        .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
        .product(name: "HTTPTypes", package: "swift-http-types"),
        .product(name: "AsyncHTTPClient", package: "async-http-client"),
        .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client"),
        .product(name: "OpenAPIURLSession", package: "swift-openapi-urlsession"),
    ] + ["NIOCore", "NIOPosix", "NIOHTTP1"].map { .product(name: $0, package: "swift-nio") }

/// `COURIER_BENCHMARK_POSTGRES=1` adds the fleet's benchmarks (issue 28): the fleet's stack with Courier's PostgreSQL
/// stores against the same stack with the in-memory ones, against the server in `COURIER_POSTGRES_URL`
/// (`Scripts/start-postgres` starts one). Off by default: postgres-nio and swift-crypto add minutes to a release
/// build, and CI runs no benchmark that needs a server.
let withPostgres = Context.environment["COURIER_BENCHMARK_POSTGRES"] == "1"

let package = Package(
    name: "Benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        // Courier with its AsyncHTTPClient transport.
        .package(
            name: "courier",
            path: "../",
            traits: withPostgres ? ["AsyncHTTPClient", "Postgres"] : ["AsyncHTTPClient"]
        ),
        // The interposer counts allocations; its other default trait (the ARC runtime interposer) would
        // need a package that is not used here.
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // The OpenAPI runtime's own transports, for the end-to-end comparison against nginx.
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-openapi-urlsession", from: "1.4.0"),
    ] + (withPostgres ? [.package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2")] : []),
    targets: [
        // The fixtures and in-memory scenarios, shared by the benchmarks and the instruction counter.
        .target(
            name: "BenchmarkSupport",
            dependencies: scenarios + [.product(name: "CourierTesting", package: "courier")]
        ),
        // Runs one scenario N times, for valgrind's instruction counts (see RESULTS.md).
        .executableTarget(name: "InstructionCounts", dependencies: ["BenchmarkSupport"]),
        // Streamed download throughput against the bare clients, and the peak memory of a large download.
        .executableTarget(name: "StreamingThroughput", dependencies: ["BenchmarkSupport"] + scenarios),
        .executableTarget(
            name: "CourierBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "CourierTesting", package: "courier"),
                .product(name: "Benchmark", package: "benchmark"),
            ] + scenarios + (withPostgres ? [.product(name: "PostgresNIO", package: "postgres-nio")] : []),
            path: "Benchmarks/CourierBenchmarks",
            swiftSettings: withPostgres ? [.define("COURIER_BENCHMARK_POSTGRES")] : [],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// As in Courier's own manifest: `any` spelled out, only imported modules visible, `public import` for API exposure.
for target in package.targets {
    target.swiftSettings =
        (target.swiftSettings ?? [])
        + ["ExistentialAny", "MemberImportVisibility", "InternalImportsByDefault"].map { .enableUpcomingFeature($0) }
}
