import EJSON
import XCTest

@testable import MeteorDDP

final class DatabaseObservationTests: XCTestCase {
    private func key(_ id: String) -> DocumentKey { DocumentKey(collectionName: "players", documentID: id) }

    func testEveryConsumerOfTheChangesSequenceGetsEveryChangeSetInOrder() async {
        let database = Database()
        var first = database.changes.makeAsyncIterator()
        var second = database.changes.makeAsyncIterator()
        database.apply(.added(key("a"), ["n": 1]))
        let a1 = await first.next()
        let a2 = await second.next()
        database.apply(.added(key("b"), ["n": 2]))
        let b1 = await first.next()
        let b2 = await second.next()
        XCTAssertEqual(a1?.affectedDocumentKeys, [key("a")])
        XCTAssertEqual(a2?.affectedDocumentKeys, [key("a")])
        XCTAssertEqual(b1?.affectedDocumentKeys, [key("b")])
        XCTAssertEqual(b2?.affectedDocumentKeys, [key("b")])
    }

    /// A consumer made after a commit does not receive it, even while its delivery is still on its way (the
    /// notification queue is behind): "from now on" is from the commits a read made now sees. The offline kill test
    /// met it: a client restored its cache, the probe read it and started watching, and the restore's own change set,
    /// delivered late on a loaded machine, showed as 20 documents changing.
    func testAConsumerMadeAfterACommitDoesNotReceiveItsLateDelivery() async {
        let database = Database()
        database.notificationQueue.suspend()
        database.apply(.added(key("a"), ["n": 1]))
        XCTAssertNotNil(database.document(key("a")), "committed: a read sees it")
        var iterator = database.changes.makeAsyncIterator()
        database.apply(.added(key("b"), ["n": 2]))
        database.notificationQueue.resume()
        let first = await iterator.next()
        XCTAssertEqual(first?.affectedDocumentKeys, [key("b")], "only the commit made after the consumer")
    }

    func testASlowConsumerGetsMergedChangeSetsInsteadOfABacklog() async {
        let database = Database()
        var iterator = database.changes.makeAsyncIterator()
        database.apply(.added(key("a"), ["n": 1]))
        database.apply(.changed(key("a"), ["n": 2], cleared: []))
        database.apply(.added(key("b"), ["n": 1]))
        database.apply(.removed(key("b")))
        database.notificationQueue.sync {}
        database.observerQueue.sync {}
        let merged = await iterator.next()
        XCTAssertEqual(merged?.affectedDocumentKeys, [key("a")], "b was added and removed: nothing")
        XCTAssertEqual(merged?.changeDetails(for: key("a"))?.changeType, .add)
        XCTAssertEqual(merged?.changeDetails(for: key("a"))?.fieldsAfter?["n"], 2)
    }

    func testCancellingTheConsumingTaskEndsTheIteration() async throws {
        let database = Database()
        let task = Task {
            var count = 0
            for await _ in database.changes { count += 1 }
            return count
        }
        task.cancel()
        let count = try await value(of: task)
        XCTAssertEqual(count, 0)
    }

    func testNotificationCarriesTheChangesUnderTheDocumentedKey() {
        let database = Database()
        let a = key("a")
        let posted = expectation(forNotification: .databaseDidChange, object: database) { notification in
            (notification.userInfo?[DatabaseChanges.userInfoKey] as? DatabaseChanges)?.affectedDocumentKeys == [a]
        }
        database.apply(.added(key("a"), [:]))
        wait(for: [posted], timeout: 5)
    }

    @MainActor
    func testMainActorObservationDeliversOnTheMainActor() async {
        let database = Database()
        let delivered = expectation(description: "delivered on the main actor")
        let token = database.observeChangesOnMainActor { changes in
            MainActor.assertIsolated()
            if changes.affectedDocumentKeys == [DocumentKey(collectionName: "players", documentID: "a")] {
                delivered.fulfill()
            }
        }
        database.apply(.added(key("a"), [:]))
        await fulfillment(of: [delivered], timeout: 5)
        token.cancel()
    }
}
