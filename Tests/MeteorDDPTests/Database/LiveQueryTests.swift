import EJSON
import XCTest

@testable import MeteorDDP

final class LiveQueryTests: XCTestCase {
    private func key(_ id: String) -> DocumentKey { DocumentKey(collectionName: "players", documentID: id) }

    /// Observes a query and returns the snapshots delivered after each committed transaction.
    private final class Recorder: @unchecked Sendable {
        private let lock = NSLock()
        private var snapshots: [LiveQuerySnapshot] = []
        /// Where the handler runs (a test waits for it after the notification queue).
        let queue = DispatchQueue(label: "LiveQueryTests.handler")
        func record(_ snapshot: LiveQuerySnapshot) { lock.withLock { snapshots.append(snapshot) } }
        var all: [LiveQuerySnapshot] {
            queue.sync {}
            return lock.withLock { snapshots }
        }
    }

    private func observe(_ database: Database, _ query: Query) -> (LiveQuery, Recorder) {
        let live = database.collection("players").observe(query)
        let recorder = Recorder()
        live.onChange(on: recorder.queue) { recorder.record($0) }
        database.notificationQueue.sync {}
        database.observerQueue.sync {}
        return (live, recorder)
    }

    private let byScore = Query(sort: [.descending("score")])

    func testTheFirstSnapshotIsTheCurrentResultWithAnEmptyDiff() {
        let (live, recorder) = observe(Database.seededPlayers(), byScore)
        XCTAssertEqual(recorder.all.first?.documents.map(\.id), ["lovelace", "turing", "gauss"])
        XCTAssertEqual(recorder.all.first?.diff, LiveQueryDiff())
        XCTAssertEqual(live.documents.map(\.id), ["lovelace", "turing", "gauss"])
    }

    func testAnInsertReportsItsNewIndex() {
        let database = Database.seededPlayers()
        let (live, recorder) = observe(database, byScore)
        database.apply(.added(key("shannon"), ["score": 20]))
        database.notificationQueue.sync {}
        database.observerQueue.sync {}
        XCTAssertEqual(recorder.all.last?.documents.map(\.id), ["lovelace", "shannon", "turing", "gauss"])
        XCTAssertEqual(recorder.all.last?.diff, LiveQueryDiff(inserted: [1]))
        withExtendedLifetime(live) {}
    }

    func testARemovalReportsItsOldIndex() {
        let database = Database.seededPlayers()
        let (live, recorder) = observe(database, byScore)
        database.apply(.removed(key("turing")))
        database.notificationQueue.sync {}
        database.observerQueue.sync {}
        XCTAssertEqual(recorder.all.last?.diff, LiveQueryDiff(removed: [1]))
        withExtendedLifetime(live) {}
    }

    func testAChangeOfTheSortKeyReportsAMoveAndAnUpdate() {
        let database = Database.seededPlayers()
        let (live, recorder) = observe(database, byScore)
        database.apply(.changed(key("gauss"), ["score": 30], cleared: []))
        database.notificationQueue.sync {}
        database.observerQueue.sync {}
        XCTAssertEqual(recorder.all.last?.documents.map(\.id), ["gauss", "lovelace", "turing"])
        let diff = recorder.all.last?.diff
        XCTAssertEqual(diff?.inserted, [])
        XCTAssertEqual(diff?.removed, [])
        XCTAssertEqual(diff?.moved.count, 1)
        XCTAssertEqual(diff?.updated, [0])
        withExtendedLifetime(live) {}
    }

    func testAChangeInPlaceReportsAnUpdateOnly() {
        let database = Database.seededPlayers()
        let (live, recorder) = observe(database, byScore)
        database.apply(.changed(key("turing"), ["name": "Alan Turing"], cleared: []))
        database.notificationQueue.sync {}
        database.observerQueue.sync {}
        XCTAssertEqual(recorder.all.last?.diff, LiveQueryDiff(updated: [1]))
        withExtendedLifetime(live) {}
    }

    func testALimitedQueryBringsTheNextDocumentInWhenOneLeaves() {
        let database = Database.seededPlayers()
        let (live, recorder) = observe(database, Query(sort: [.descending("score")], limit: 2))
        XCTAssertEqual(recorder.all.first?.documents.map(\.id), ["lovelace", "turing"])
        database.apply(.removed(key("lovelace")))
        database.notificationQueue.sync {}
        database.observerQueue.sync {}
        XCTAssertEqual(recorder.all.last?.documents.map(\.id), ["turing", "gauss"])
        XCTAssertEqual(recorder.all.last?.diff, LiveQueryDiff(inserted: [1], removed: [0]))
        withExtendedLifetime(live) {}
    }

    func testChangesThatDoNotAffectTheResultDeliverNothing() {
        let database = Database.seededPlayers()
        let (live, recorder) = observe(
            database, Query(filter: { ($0["score"]?.doubleValue ?? 0) > 10 }, sort: [.descending("score")]))
        let before = recorder.all.count
        database.apply(.added(DocumentKey(collectionName: "other", documentID: "x"), [:]))
        database.apply(.added(key("low"), ["score": 1]))
        database.notificationQueue.sync {}
        database.observerQueue.sync {}
        XCTAssertEqual(recorder.all.count, before)
        withExtendedLifetime(live) {}
    }

    func testStoppingEndsDelivery() {
        let database = Database.seededPlayers()
        let (live, recorder) = observe(database, byScore)
        live.stop()
        let before = recorder.all.count
        database.apply(.added(key("shannon"), ["score": 20]))
        database.notificationQueue.sync {}
        database.observerQueue.sync {}
        XCTAssertEqual(recorder.all.count, before)
    }
}
