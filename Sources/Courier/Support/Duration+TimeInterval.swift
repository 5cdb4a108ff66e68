import Foundation

extension Duration {
    /// The duration in seconds, as Foundation's dates count time (`Date.addingTimeInterval`). It cannot trap:
    /// both components fit a `Double`.
    var timeInterval: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
