import EJSON
import XCTest

@testable import MeteorDDP

/// Observations end when their consumer goes, and start when their API returns.
final class ObservationLifetimeTests: XCTestCase {
    private func key(_ id: String) -> DocumentKey { DocumentKey(collectionName: "players", documentID: id) }

    func testAChangesIteratorDroppedAfterItsFirstChangeReleasesItsConsumer() async {
        // What `for await changes in database.changes { …; break }` does: take one element, drop the iterator.
        let database = Database()
        var iterator: DatabaseChangesSequence.AsyncIterator? = database.changes.makeAsyncIterator()
        XCTAssertEqual(database.subscribers.withLockedValue { $0.count }, 1, "registered when the iteration starts")
        database.apply(.added(key("a"), ["n": 1]))
        let first = await iterator!.next()
        XCTAssertEqual(first?.affectedDocumentKeys, [key("a")])
        iterator = nil
        XCTAssertEqual(database.subscribers.withLockedValue { $0.count }, 0, "the consumer went with its iterator")
    }

    func testACancelledOnChangeHandlerIsNotCalledAgain() {
        let database = Database.seededPlayers()
        let live = database.collection("players").observe()
        let queue = DispatchQueue(label: "handler")
        let calls = Locked(0)
        let token = live.onChange(on: queue) { _ in calls.mutate { $0 += 1 } }
        database.waitUntilDelivered()
        queue.sync {}
        XCTAssertEqual(calls.value, 1, "the current result")
        database.apply(.added(key("x"), ["score": 1]))
        database.waitUntilDelivered()
        queue.sync {}
        XCTAssertEqual(calls.value, 2)
        token.cancel()
        database.apply(.added(key("y"), ["score": 2]))
        database.waitUntilDelivered()
        queue.sync {}
        XCTAssertEqual(calls.value, 2)
        withExtendedLifetime(live) {}
    }

    func testOnChangeHandlersRunOffTheNotificationQueue() {
        let database = Database.seededPlayers()
        database.notificationQueue.setSpecific(key: Self.probe, value: "notifications")
        let live = database.collection("players").observe()
        let ran = expectation(description: "handler ran")
        let onNotificationQueue = Locked<Bool?>(nil)
        live.onChange { _ in
            // Reading the database and observing it again from the handler is allowed.
            onNotificationQueue.mutate { $0 = DispatchQueue.getSpecific(key: Self.probe) == "notifications" }
            _ = database.collection("players").observe()
            ran.fulfill()
        }
        wait(for: [ran], timeout: 5)
        XCTAssertEqual(onNotificationQueue.value, false)
    }

    private static let probe = DispatchSpecificKey<String>()

    @MainActor
    func testObservingOnTheMainActorMissesNoCommitMadeRightAfter() async throws {
        let database = Database()
        let seen = expectation(description: "the commit made right after observing")
        let token = database.observeChangesOnMainActor { changes in
            if changes.affectedDocumentKeys.contains(DocumentKey(collectionName: "players", documentID: "a")) {
                seen.fulfill()
            }
        }
        database.apply(.added(key("a"), ["n": 1]))
        database.waitUntilDelivered()
        await fulfillment(of: [seen], timeout: 5)
        token.cancel()
    }
}
