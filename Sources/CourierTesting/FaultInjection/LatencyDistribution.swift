import Foundation

/// How long a ``FaultInjectingTransport`` delays a request: a fixed time, or a random one drawn from a
/// seeded generator (the same on every run).
///
/// ```swift
/// .latency(.fixed(.milliseconds(50)))
/// .latency(.uniform(.milliseconds(10)...(.milliseconds(200))))
/// .latency(.exponential(mean: .milliseconds(80), cap: .seconds(2)))
/// .latency(.logNormal(median: .milliseconds(40), p99: .milliseconds(900)))   // a realistic long tail
/// ```
public struct LatencyDistribution: Sendable, CustomStringConvertible {
    private let sampler: @Sendable (inout SplitMix64) -> Duration

    /// How the distribution reads in messages, for example `uniform(0.01 seconds...0.2 seconds)`.
    public let description: String

    /// Creates a distribution from a sampling function.
    ///
    /// - Parameters:
    ///   - description: How it reads in messages.
    ///   - sample: Draws one delay from the generator; negative results count as zero.
    public init(_ description: String, sample: @escaping @Sendable (inout SplitMix64) -> Duration) {
        self.description = description
        self.sampler = sample
    }

    /// Draws one delay.
    ///
    /// - Returns: A delay of zero or more.
    public func sample(using generator: inout SplitMix64) -> Duration {
        max(sampler(&generator), .zero)
    }

    /// Always `duration`.
    public static func fixed(_ duration: Duration) -> LatencyDistribution {
        LatencyDistribution("fixed(\(duration))") { _ in duration }
    }

    /// Evenly spread over `range`.
    ///
    /// - Parameter range: The shortest and longest delay.
    public static func uniform(_ range: ClosedRange<Duration>) -> LatencyDistribution {
        let low = range.lowerBound.seconds
        let width = range.upperBound.seconds - low
        return LatencyDistribution("uniform(\(range))") { generator in
            .seconds(low + width * generator.nextUnitInterval())
        }
    }

    /// Exponentially spread with the given mean (many short delays, a few long ones), capped at `cap`.
    ///
    /// - Parameters:
    ///   - mean: The average delay.
    ///   - cap: The longest delay, or `nil` for no cap.
    public static func exponential(mean: Duration, cap: Duration? = nil) -> LatencyDistribution {
        let meanSeconds = mean.seconds
        let capText = cap.map { ", cap: \($0)" } ?? ""
        return LatencyDistribution("exponential(mean: \(mean)\(capText))") { generator in
            let draw = Duration.seconds(-meanSeconds * log(1 - generator.nextUnitInterval()))
            return cap.map { min(draw, $0) } ?? draw
        }
    }

    /// Log-normally spread, given by its median and 99th percentile: the long-tailed shape real network
    /// latency has.
    ///
    /// - Parameters:
    ///   - median: Half of the delays are shorter than this.
    ///   - p99: 99 % of the delays are shorter than this; must not be less than `median`.
    public static func logNormal(median: Duration, p99: Duration) -> LatencyDistribution {
        precondition(median > .zero && p99 >= median, "logNormal needs 0 < median <= p99")
        let mu = log(median.seconds)
        // 2.326… is the 99th percentile of the standard normal distribution.
        let sigma = log(p99.seconds / median.seconds) / 2.326_347_874
        return LatencyDistribution("logNormal(median: \(median), p99: \(p99))") { generator in
            // Box–Muller: two uniform draws make one standard normal draw.
            let u1 = 1 - generator.nextUnitInterval()
            let u2 = generator.nextUnitInterval()
            let normal = (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
            return .seconds(exp(mu + sigma * normal))
        }
    }
}

extension Duration {
    /// The duration in seconds, as a double.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }
}
