import EJSON
import Foundation
import XCTest

@testable import MeteorDDP

/// ``PendingStubMode/rebase`` with the offline store: calls restored at launch are replayed over the fresh server
/// data of the first connection instead of hiding it, and a replay that no longer holds is reported then.
final class OfflineRebaseTests: XCTestCase {
    private var file: URL!
    private let ada = DocumentKey(collectionName: "players", documentID: "ada")

    override func setUpWithError() throws {
        file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "offline-rebase-\(UUID().uuidString)/cache.sqlite")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: file.deletingLastPathComponent())
    }

    struct Missing: Error {}

    private func launch(_ mode: PendingStubMode) -> ClientHarness {
        let harness = ClientHarness { configuration in
            configuration.persistence = .sqlite(at: file)
            configuration.pendingStubMode = mode
        }
        harness.client.defineStub("bump") { context in
            let players = context.collection("players")
            guard players.document(id: "ada") != nil else { throw Missing() }
            return .number(Double(try players.update("ada", ["$inc": ["score": 1]])))
        }
        return harness
    }

    /// Run 1: "players" ready with Ada (score 25), then the connection drops and `bump` is called twice offline.
    private func firstRunWithTwoOfflineBumps() throws {
        let harness = launch(.rebase)
        harness.establishConnection()
        let players = harness.client.subscribe("players")
        harness.settle()
        harness.receive(.added(collection: "players", id: "ada", fields: ["name": "Ada", "score": 25]))
        harness.receive(.ready(subscriptionIDs: [players.id]))
        harness.flushData()
        harness.transport.fail()
        harness.settle()
        try harness.client.call("bump") { _ in }
        try harness.client.call("bump") { _ in }
        harness.flushData()
        harness.client.waitUntilPersisted()
        XCTAssertEqual(harness.client.database.document(ada)?.fields, ["name": "Ada", "score": 27])
        withExtendedLifetime(players) {}
    }

    /// Run 2: connects; the server renamed Ada meanwhile (the calls have not run there yet).
    private func secondRunSeesTheRename(_ mode: PendingStubMode) throws -> ClientHarness {
        try firstRunWithTwoOfflineBumps()
        let harness = launch(mode)
        XCTAssertEqual(harness.client.database.document(ada)?.fields, ["name": "Ada", "score": 27], "restored")
        let players = harness.client.subscribe("players")
        harness.establishConnection()
        harness.receive(.added(collection: "players", id: "ada", fields: ["name": "Ada Lovelace", "score": 25]))
        harness.receive(.ready(subscriptionIDs: [players.id]))
        harness.flushData()
        return harness
    }

    func testRestoredCallsAreReplayedOverTheFirstConnectionsData() throws {
        let harness = try secondRunSeesTheRename(.rebase)
        XCTAssertEqual(harness.client.database.document(ada)?.fields, ["name": "Ada Lovelace", "score": 27])
        // The server runs both calls: its data, then their `updated`.
        harness.receive(.changed(collection: "players", id: "ada", fields: ["score": 27], cleared: []))
        harness.receive(.result(id: "1", result: 1, error: nil))
        harness.receive(.result(id: "2", result: 1, error: nil))
        harness.receive(.updated(methodIDs: ["1", "2"]))
        harness.flushData()
        XCTAssertEqual(harness.client.database.document(ada)?.fields, ["name": "Ada Lovelace", "score": 27])
        XCTAssertEqual(harness.restoredOutcomeSummaries, ["succeeded", "succeeded"])
    }

    func testUnderMeteorsRuleTheRestoredCallsHideTheFirstConnectionsData() throws {
        let harness = try secondRunSeesTheRename(.holdServerData)
        XCTAssertEqual(harness.client.database.document(ada)?.fields, ["name": "Ada", "score": 27])
    }

    func testARestoredCallWhoseReplayNoLongerHoldsIsReportedAtTheFirstConnection() async throws {
        try firstRunWithTwoOfflineBumps()
        let harness = launch(.rebase)
        var errors = harness.client.errors.makeAsyncIterator()
        let players = harness.client.subscribe("players")
        harness.establishConnection()
        // Someone removed Ada while this client was offline.
        harness.receive(.ready(subscriptionIDs: [players.id]))
        harness.flushData()
        XCTAssertNil(harness.client.database.document(ada), "the server's data shows at once")
        harness.receive(.result(id: "marker", result: nil, error: nil))
        var reported: [String?] = []
        while let error = await errors.next(), !error.message.contains("marker") {
            if error.code == .stubReplayFailed { reported.append(error.methodName) }
        }
        XCTAssertEqual(reported, ["bump", "bump"], "each call's stub, once")
        XCTAssertEqual(
            harness.sent.filter { if case .method(_, "bump", _, _) = $0 { true } else { false } }.count, 2,
            "both calls go to the server, whose answer decides")
    }
}
