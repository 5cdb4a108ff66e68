// Runs one in-memory scenario a given number of times, for counting instructions with valgrind:
//
//     valgrind --tool=callgrind --callgrind-out-file=/dev/null .build/release/InstructionCounts pass10 1000
//     valgrind --tool=callgrind --callgrind-out-file=/dev/null .build/release/InstructionCounts pass10 11000
//
// The difference between the two totals ("Collected"), divided by 10,000, is the instructions per call,
// free of start-up costs. Instruction counts do not depend on what else the machine is doing, so they
// compare changes reliably where wall-clock timings on a shared machine cannot; see RESULTS.md.
// `Benchmarks/check-budgets` measures the budgeted scenarios this way and compares them with budgets.txt.

import BenchmarkSupport
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

@main
struct InstructionCounts {
    // A synchronous `main` that waits on a semaphore: valgrind 3.19 crashes in libdispatch's main-thread
    // signal handling, which an `async` main enters.
    static func main() throws {
        let arguments = CommandLine.arguments
        let scenarios = Scenarios.all() + FeatureScenarios.all() + TransportScenarios.all()
        guard arguments.count == 3 || arguments.count == 4, let count = Int(arguments[2]),
            let scenario = scenarios.first(where: { $0.name == arguments[1] })
        else {
            print("usage: InstructionCounts SCENARIO COUNT [time]")
            print("scenarios: " + scenarios.map(\.name).joined(separator: " "))
            exit(2)
        }
        let calls = scenario.calls
        let timed = arguments.count == 4
        let failure = Mutex<(any Error)?>(nil)
        let done = DispatchSemaphore(value: 0)
        // The calls run on the cooperative pool, like a server's, not on the main thread.
        Task.detached {
            do {
                if timed {
                    // Wall time: the best of 7 runs, per call.
                    let clock = ContinuousClock()
                    var best = Duration.seconds(1_000)
                    for _ in 0..<7 {
                        best = min(best, try await clock.measure { try await calls(count) })
                    }
                    print(scenario.name, best / count)
                } else {
                    try await calls(count)
                }
            } catch {
                failure.withLock { $0 = error }
            }
            done.signal()
        }
        done.wait()
        if let error = failure.withLock({ $0 }) { throw error }
    }
}
