import XCTest

@testable import MeteorDDP

/// RetryStrategy against Meteor's `Retry` (Tests/MeteorDDPTests/Fixtures/retry.json).
final class RetryStrategyTests: XCTestCase {
    private struct FixedFraction: RandomGenerator {
        let value: Double
        func fraction() -> Double { value }
    }

    private func rows(_ table: String) throws -> [(count: Int, timeout: Double)] {
        let root = try XCTUnwrap(Fixtures.json("retry") as? [String: Any])
        let rows = try XCTUnwrap((root[table] as? [String: Any])?["rows"] as? [[String: Any]])
        return try rows.map { row in
            let timeout = try XCTUnwrap(row["timeout"] as? [String: Any])
            let bits = try XCTUnwrap(UInt64(try XCTUnwrap(timeout["bits"] as? String), radix: 16))
            return (try XCTUnwrap(row["count"] as? Int), Double(bitPattern: bits))
        }
    }

    private func assertMatches(
        _ table: String, fraction: Double, fuzz: Double = 0.5, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let strategy = RetryStrategy(fuzz: fuzz, random: FixedFraction(value: fraction))
        let rows = try rows(table)
        XCTAssertGreaterThan(rows.count, 10, file: file, line: line)
        for row in rows {
            let ours = strategy.timeout(forRetryCount: row.count)
            XCTAssertEqual(
                ours, row.timeout, accuracy: row.timeout * 4 * Double.ulpOfOne, "count \(row.count)", file: file,
                line: line)
            XCTAssertEqual(
                Int(ours), Int(row.timeout), "whole milliseconds, as setTimeout uses them", file: file, line: line)
        }
    }

    func testWithoutFuzzTheTimeoutsAreMeteorsIncludingTheFiveMinuteCap() throws {
        try assertMatches("noFuzz_fuzz0", fraction: 0.5, fuzz: 0)
    }

    func testJitterMatchesMeteorAcrossTheWholeFractionRange() throws {
        try assertMatches("defaults_fractionStubbed_0_5", fraction: 0.5)
        try assertMatches("defaults_fractionStubbed_0", fraction: 0)
        try assertMatches("defaults_fractionStubbed_0_999999", fraction: 0.999999)
    }

    func testTheFirstRetriesUseTheMinimumAndDrawNoFraction() {
        final class Counting: RandomGenerator, @unchecked Sendable {
            var draws = 0
            func fraction() -> Double {
                draws += 1
                return 0.5
            }
        }
        let counting = Counting()
        let strategy = RetryStrategy(random: counting)
        XCTAssertEqual(strategy.timeout(forRetryCount: 0), 10)
        XCTAssertEqual(strategy.timeout(forRetryCount: 1), 10)
        XCTAssertEqual(counting.draws, 0)
        _ = strategy.timeout(forRetryCount: 2)
        XCTAssertEqual(counting.draws, 1)
    }

    func testDefaultJitterStaysWithinAQuarterOfTheUnfuzzedTimeoutAndUnderTheCap() {
        let strategy = RetryStrategy.meteorDefault
        for count in 2..<30 {
            let unfuzzed = min(300_000, 1000 * RetryStrategy.pow(2.2, count))
            let timeout = strategy.timeout(forRetryCount: count)
            XCTAssertGreaterThanOrEqual(timeout, unfuzzed * 0.75)
            XCTAssertLessThan(timeout, unfuzzed * 1.25)
        }
    }

    func testDelayTruncatesToWholeMilliseconds() {
        let strategy = RetryStrategy(random: FixedFraction(value: 0.5))
        XCTAssertEqual(strategy.delay(forRetryCount: 2), .milliseconds(4840))
    }
}
