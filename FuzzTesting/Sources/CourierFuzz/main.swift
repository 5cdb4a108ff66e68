// The libFuzzer driver: runs the target that `--target=<name>` names (libFuzzer ignores flags that start with
// `--`) on every input, and stops the process with the target's message when an invariant fails.
//
// SwiftPM links a debug executable with its top-level code as `main`, so this code hands the process to
// libFuzzer's driver itself; it reaches the same `LLVMFuzzerTestOneInput` either way.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafeRawPointer?, Int) -> CInt
) -> CInt

/// The target `--target=<name>` names; the process stops with the list of names when there is none.
let selectedTarget: FuzzTargets.Target = {
    let prefix = "--target="
    let names = FuzzTargets.all.map(\.name).joined(separator: ", ")
    guard let argument = CommandLine.arguments.first(where: { $0.hasPrefix(prefix) }) else {
        fatalError("pass --target=<name>, one of: \(names)")
    }
    let name = argument.dropFirst(prefix.count)
    guard let target = FuzzTargets.all.first(where: { $0.name == name }) else {
        fatalError("no fuzz target \(name); the targets are: \(names)")
    }
    return target
}()

/// libFuzzer's entry point: one input through the selected target.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    do {
        try selectedTarget.run(bytes)
    } catch {
        fatalError("\(selectedTarget.name): \(error)")
    }
    return 0
}

_ = selectedTarget
var arguments = CommandLine.argc
var argumentValues = CommandLine.unsafeArgv
exit(runFuzzerDriver(&arguments, &argumentValues, fuzzOneInput))
