// swift-tools-version:6.1
import PackageDescription

// Fuzz tests of Courier's parsers of bytes a server controls, with libFuzzer: one executable whose
// `--target=<name>` picks the parser (see FuzzTesting/run, which builds it once and runs every target).
//
//     swift build --package-path FuzzTesting -Xswiftc -sanitize=fuzzer,address
//     FuzzTesting/.build/debug/CourierFuzz --target=sse FuzzTesting/Corpora/sse
//
// The targets are internal parsers, reached with `@testable import Courier`: a debug build compiles Courier with
// testing enabled. The root package's tests replay every committed corpus file through the same targets.
let package = Package(
    name: "courier-fuzz-testing",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "courier", path: "../")],
    targets: [
        .executableTarget(name: "CourierFuzz", dependencies: [.product(name: "Courier", package: "courier")])
    ],
    swiftLanguageModes: [.v6]
)

// The same upcoming features as the root package's targets, since FuzzTargets.swift is compiled in both.
for target in package.targets {
    target.swiftSettings = ["ExistentialAny", "MemberImportVisibility", "InternalImportsByDefault"].map {
        .enableUpcomingFeature($0)
    }
}
