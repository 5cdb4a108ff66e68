import Foundation

/// Where SwiftPM put what it built alongside this test bundle (`.build/debug`): the snippets' executables and
/// the `Modules` directory. `nil` when the tests run from somewhere else.
enum BuildProducts {
    static let directory: URL? = {
        var directory = Bundle.main.bundleURL
        for _ in 0..<4 {
            let modules = directory.appendingPathComponent("Modules/Courier.swiftmodule")
            if FileManager.default.fileExists(atPath: modules.path) { return directory }
            directory.deleteLastPathComponent()
        }
        return nil
    }()

    /// The built executable `name` (a snippet such as `QuickTour`), if it is there.
    static func executable(_ name: String) -> URL? {
        guard let url = directory?.appendingPathComponent(name),
            FileManager.default.isExecutableFile(atPath: url.path)
        else { return nil }
        return url
    }
}
