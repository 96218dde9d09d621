import EJSON
import Foundation
import Logging
import TestSupport
import XCTest

@_spi(Testing) @testable import MeteorDDP

/// A flood of protocol violations logs one line a second per kind, then a summary; the errors stream still gets
/// every one. Frame lines (`.trace`) are bounded the same way, at 100 a second per kind.
final class LogThrottleTests: XCTestCase {
    private func harness(_ log: LogRecorder, level: Logger.Level) -> ClientHarness {
        ClientHarness { configuration in
            configuration.logger = log.logger
            configuration.logger.logLevel = level
        }
    }

    func testRepeatedViolationsOfOneKindAreLoggedOnceThenSummarisedAndAllReported() async throws {
        let log = LogRecorder()
        let harness = harness(log, level: .debug)
        harness.establishConnection()
        let errors = harness.client.errors
        let reported = Task { () -> Int in
            var count = 0
            for await error in errors where error.code == .protocolViolation {
                count += 1
                if count == 200 { break }
            }
            return count
        }
        for id in 0..<100 {
            harness.transport.receive(.result(id: "unknown-\(id)", result: 1, error: nil))
            harness.transport.receive(.updated(methodIDs: ["unknown-\(id)"]))
        }
        harness.settle()
        let count = try await withTimeout(10, "every violation reported") { await reported.value }
        XCTAssertEqual(count, 200, "the errors stream is complete")
        let violations = log.lines.filter { $0.hasPrefix("DDP protocol violation") }
        XCTAssertEqual(violations.count, 2, "one line per kind (result, updated): \(violations)")
        XCTAssertEqual(log.lines.filter { $0.contains("were not logged") }, [], "no summary before the second is over")

        harness.advance(by: .seconds(1))
        let summaries = log.lines.filter { $0.contains("were not logged") }.sorted()
        XCTAssertEqual(summaries.count, 2, "\(summaries)")
        XCTAssertTrue(
            summaries.allSatisfy { $0.contains("99 more lines") && $0.contains("notLogged=99") }, "\(summaries)")
        XCTAssertTrue(summaries[0].contains("kind=protocolViolation unexpected result"), summaries[0])

        // A new second: the next one is logged again.
        harness.receive(.result(id: "unknown-x", result: 1, error: nil))
        XCTAssertEqual(log.lines.filter { $0.hasPrefix("DDP protocol violation") }.count, 3)
    }

    func testFrameLinesAreBoundedPerKindAtTrace() throws {
        let log = LogRecorder()
        let harness = harness(log, level: .trace)
        harness.establishConnection()
        // A batch each, so each ping is answered (the pings of one batch share one pong).
        for id in 0..<500 {
            harness.transport.receive(.ping(id: "p\(id)"))
            harness.settle()
        }
        let received = log.lines.filter { $0.hasPrefix("received") && $0.contains("ping") }
        let sent = log.lines.filter { $0.hasPrefix("sent") && $0.contains("pong") }
        XCTAssertEqual(received.count, 100)
        XCTAssertEqual(sent.count, 100)
        XCTAssertEqual(harness.sent.filter { if case .pong = $0 { true } else { false } }.count, 500, "every pong sent")
        harness.advance(by: .seconds(1))
        XCTAssertEqual(
            log.lines.filter { $0.contains("400 more lines of this kind") }.count, 2, "\(log.lines.suffix(3))")
    }

    /// The lines the server's data can still make per frame are bounded too: `ready` and `nosub` for subscriptions
    /// the client does not have, `removed` and `changed` for documents it does not have (one line per kind and
    /// transaction, each passed through the throttle), and data for a stub-written document that does not fit its
    /// kept-aside copy. Before, each was one line per frame (500 frames: 2,000 lines).
    func testUnknownSubscriptionsAndCacheAnomaliesAreLoggedOnceASecondPerKind() throws {
        let log = LogRecorder()
        let harness = harness(log, level: .debug)
        harness.establishConnection()
        _ = harness.client.collection("tasks")
        for id in 0..<500 {
            harness.transport.receive(.ready(subscriptionIDs: ["unknown-\(id)"]))
            harness.transport.receive(.nosub(id: "unknown-\(id)", error: nil))
            harness.transport.receive(.removed(collection: "tasks", id: "ghost-\(id)"))
            harness.flushData()
        }
        harness.settle()
        func lines(_ text: String) -> [String] { log.lines.filter { $0.contains(text) } }
        XCTAssertEqual(lines("ready for an unknown subscription").count, 1)
        XCTAssertEqual(lines("nosub for an unknown subscription").count, 1)
        XCTAssertEqual(lines("removed for a missing document").count, 1, "\(lines("removed for a missing").prefix(3))")
        harness.advance(by: .seconds(1))
        XCTAssertEqual(lines("499 more lines of this kind").count, 3, "\(log.lines.suffix(4))")
        XCTAssertTrue(
            lines("499 more lines").contains { $0.contains("kind=anomaly removed") }, "\(log.lines.suffix(4))")
    }

    /// One transaction tolerating many anomalies logs a line per kind with the count, not a line per document.
    func testATransactionLogsOneLinePerKindOfAnomalyWithItsCount() {
        let log = LogRecorder()
        let database = Database(logger: log.logger)
        database.apply(
            (0..<1000).map { DataUpdate.removed(DocumentKey(collectionName: "tasks", documentID: "ghost-\($0)")) })
        XCTAssertEqual(log.lines.count, 1, "\(log.lines.prefix(3))")
        XCTAssertTrue(log.lines.first?.contains("documents=1000") ?? false, "\(log.lines)")
        XCTAssertTrue(log.lines.first?.contains("tasks/ghost-0") ?? false, "the first document: \(log.lines)")
    }
}
