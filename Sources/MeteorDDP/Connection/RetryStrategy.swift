/// Reconnect back-off exactly as Meteor's `Retry` (packages/retry): a short minimum for the first attempts, then
/// exponential growth capped at 5 minutes, with ±25 % jitter by default.
///
/// For example:
/// ```swift
/// let retry = RetryStrategy.meteorDefault
/// retry.timeout(forRetryCount: 0)  // 10 ms
/// retry.timeout(forRetryCount: 2)  // 1000 * 2.2^2 * [0.75, 1.25) ms
/// ```
public struct RetryStrategy: Sendable {
    /// The timeout before jitter at retry count 0 of the exponential part, in milliseconds (Meteor: 1000).
    public var baseTimeout: Double
    /// The growth factor per retry (Meteor: 2.2).
    public var exponent: Double
    /// The cap before jitter, in milliseconds (Meteor: 300 000, 5 minutes).
    public var maxTimeout: Double
    /// The timeout for the first `minCount` retries, in milliseconds (Meteor: 10).
    public var minTimeout: Double
    /// How many retries use `minTimeout` (Meteor: 2).
    public var minCount: Int
    /// The jitter width: the timeout is multiplied by `fraction * fuzz + (1 - fuzz / 2)` (Meteor: 0.5).
    public var fuzz: Double
    /// Where the jitter's fractions come from (default: secure randomness; tests inject a seeded `Alea`).
    public var random: any RandomGenerator

    /// Creates a strategy; the defaults are Meteor's.
    public init(
        baseTimeout: Double = 1000,
        exponent: Double = 2.2,
        maxTimeout: Double = 300_000,
        minTimeout: Double = 10,
        minCount: Int = 2,
        fuzz: Double = 0.5,
        random: any RandomGenerator = SecureRandomGenerator()
    ) {
        self.baseTimeout = baseTimeout
        self.exponent = exponent
        self.maxTimeout = maxTimeout
        self.minTimeout = minTimeout
        self.minCount = minCount
        self.fuzz = fuzz
        self.random = random
    }

    /// Meteor's defaults.
    public static let meteorDefault = RetryStrategy()

    /// The timeout in milliseconds before retry number `count` (Meteor's `Retry._timeout`, to the last bit).
    /// No fraction is drawn for `count < minCount`.
    public func timeout(forRetryCount count: Int) -> Double {
        if count < minCount { return minTimeout }
        let unfuzzed = min(maxTimeout, baseTimeout * Self.pow(exponent, count))
        return unfuzzed * (random.fraction() * fuzz + (1 - fuzz / 2))
    }

    /// The delay before retry number `count`, truncated to whole milliseconds as `setTimeout` does.
    public func delay(forRetryCount count: Int) -> Duration {
        .milliseconds(Int64(timeout(forRetryCount: count).rounded(.towardZero)))
    }

    /// `base^exponent` by repeated multiplication, which is what V8's `Math.pow` gives for small integer exponents
    /// (for example 2.2² = 4.840000000000001).
    static func pow(_ base: Double, _ exponent: Int) -> Double {
        var result = 1.0
        for _ in 0..<max(0, exponent) { result *= base }
        return result
    }
}
