import Foundation

/// Shared helpers for the benchmark executable: a monotonic stopwatch, repeated runs with the median taken,
/// and one printed line per figure with its same-run baseline and the ratio.
enum Bench {
    /// Nanoseconds on a monotonic clock.
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Runs `body` `runs` times and returns the median duration in seconds.
    static func medianSeconds(runs: Int = 5, _ body: () throws -> Void) rethrows -> Double {
        var samples: [Double] = []
        for _ in 0..<runs {
            let start = now()
            try body()
            samples.append(Double(now() - start) / 1e9)
        }
        samples.sort()
        return samples[samples.count / 2]
    }

    /// Prints a section heading.
    static func section(_ title: String) {
        print("\n== \(title)")
    }

    /// Prints one figure: ours, the baseline measured in the same run, and ours / baseline.
    static func report(
        _ name: String, ours: Double, baseline: Double, unit: String, baselineName: String, target: String? = nil
    ) {
        let ratio = baseline == 0 ? .infinity : ours / baseline
        var line =
            "\(name): \(format(ours)) \(unit) vs \(baselineName) \(format(baseline)) \(unit) "
            + "-> ratio \(String(format: "%.2f", ratio))x"
        if let target { line += "  (target \(target))" }
        print(line)
    }

    /// Prints a single figure without a baseline (for example a count or a percentile).
    static func figure(_ name: String, _ value: Double, unit: String, note: String? = nil) {
        var line = "\(name): \(format(value)) \(unit)"
        if let note { line += "  (\(note))" }
        print(line)
    }

    /// Runs this executable's `section` in a fresh process with `environment` added, and returns the figures of the
    /// line it prints starting with `prefix` (`nil` when it fails or prints none).
    static func runInFreshProcess(section: String, environment: [String: String], prefix: String) -> [Double]? {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        child.arguments = [section]
        child.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        child.standardOutput = output
        guard (try? child.run()) != nil else { return nil }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        child.waitUntilExit()
        guard child.terminationStatus == 0 else { return nil }
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix(prefix + " ") }
        return line?.split(separator: " ").dropFirst().compactMap { Double($0) }
    }

    static func format(_ value: Double) -> String {
        if value >= 100 { return String(format: "%.0f", value) }
        if value >= 1 { return String(format: "%.2f", value) }
        return String(format: "%.4f", value)
    }
}
