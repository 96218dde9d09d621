import EJSON
import XCTest

@testable import MeteorDDP

/// A server that never sends `ready` (or `updated`) after a reconnect cannot make the client hold data forever: at
/// `maxMessagesHeldForQuiescence` the client applies what it holds and stops waiting.
final class QuiescenceLimitTests: XCTestCase {
    func testAHoldThatReachesItsLimitIsAppliedAndReported() async throws {
        let harness = ClientHarness { $0.maxMessagesHeldForQuiescence = 3 }
        harness.establishConnection()
        let sub = harness.client.subscribe("players")
        harness.receive(.ready(subscriptionIDs: [sub.id]))
        let errors = harness.client.errors
        let limitReported = Task { await errors.first { $0.code == .limitReached } }
        harness.dropAndReopen()
        harness.receive(.connected(session: "SESSION-2"))
        harness.receive(.added(collection: "players", id: "a", fields: ["n": 1]))
        harness.receive(.added(collection: "players", id: "b", fields: ["n": 2]))
        harness.flushData()
        XCTAssertNil(harness.document("players", "a"), "held while the revived subscription is not ready")
        harness.receive(.added(collection: "players", id: "c", fields: ["n": 3]))
        harness.flushData()
        XCTAssertEqual(harness.client.database.snapshot.documentCount(in: "players"), 3, "applied at the limit")
        let reported = try await value(of: limitReported, within: 5)
        XCTAssertEqual(reported?.code, .limitReached)
        // Later data is applied as it comes, and the subscription still becomes ready when the server says so.
        harness.receive(.added(collection: "players", id: "d", fields: ["n": 4]))
        harness.receive(.ready(subscriptionIDs: [sub.id]))
        harness.flushData()
        XCTAssertNotNil(harness.document("players", "d"))
        XCTAssertEqual(sub.status, .ready)
    }

    func testAHoldUnderItsLimitKeepsWaiting() {
        let harness = ClientHarness { $0.maxMessagesHeldForQuiescence = 100 }
        harness.establishConnection()
        let sub = harness.client.subscribe("players")
        harness.receive(.ready(subscriptionIDs: [sub.id]))
        harness.dropAndReopen()
        harness.receive(.connected(session: "SESSION-2"))
        for index in 0..<99 { harness.receive(.added(collection: "players", id: "p\(index)", fields: [:])) }
        harness.flushData()
        XCTAssertEqual(harness.client.database.snapshot.documentCount(in: "players"), 0)
    }
}
