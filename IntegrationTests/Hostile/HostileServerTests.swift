import HostileTable
import XCTest

/// The hostile-server table (its rows are in Tests/HostileTable) in the debug suite: the floods at a quick size, the
/// limits the same as at full size. `MDDP_HOSTILE_FULL=1` runs them at full size here too; `.ci/run hostile` runs
/// the full table from a release build of `HostileTableRunner`.
final class HostileServerTests: XCTestCase {
    static let full = ProcessInfo.processInfo.environment["MDDP_HOSTILE_FULL"] == "1"

    private func check(_ row: HostileTable.Row) async throws {
        let outcome = try await row.run(full: Self.full)
        for failure in outcome.failures { XCTFail(failure) }
    }

    func testAFrameOver16MiBClosesWith1009() async throws { try await check(.frameOver16MiB) }
    func testAFragmentedMessageOver64MiBClosesWith1009() async throws { try await check(.fragmentedMessageOver64MiB) }
    func testDeepNestingIsAMalformedFrame() async throws { try await check(.deepNesting) }
    func testInvalidUTF8ClosesWith1007AtOnce() async throws { try await check(.invalidUTF8) }
    func testAPingFloodIsAnsweredQuickly() async throws { try await check(.pingFlood) }
    func testAPingFloodWhileNotReadingKeepsTheConnection() async throws {
        try await check(.pingFloodWhileNotReading)
    }
    func testUnknownResultsAndUpdatedAreCheap() async throws { try await check(.unknownResultsAndUpdated) }
    func testUnknownResultsAreCheap() async throws { try await check(.unknownResults) }
    func testUnknownUpdatedAreCheap() async throws { try await check(.unknownUpdated) }
    func testAnUnreadableResultFailsThePendingCall() async throws { try await check(.unreadableResultForAPendingCall) }
    func testAFloodOfAnUndeclaredCollectionStopsAtItsLimit() async throws {
        try await check(.undeclaredCollectionFlood)
    }
    func testReadyNeverSentAfterAReconnectIsBoundedByTheHoldLimit() async throws {
        try await check(.readyNeverSentAfterAReconnect)
    }
    func testHalfAFrameThenSilenceIsEndedByTheHeartbeat() async throws { try await check(.halfAFrameThenSilence) }
    func testGarbageAfterTheHandshakeClosesTheConnection() async throws { try await check(.garbageAfterTheHandshake) }
}
