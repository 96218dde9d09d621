import EJSON
import XCTest

@testable import MeteorDDP

/// `LiveQuery.snapshots`: every consumer in order, bounded memory for a slow one, and a clean end.
final class LiveQuerySnapshotsTests: XCTestCase {
    private func key(_ id: String) -> DocumentKey { DocumentKey(collectionName: "players", documentID: id) }
    private let byScore = Query(sort: [.descending("score")])

    func testIteratingTheSnapshotsOfATemporaryLiveQueryKeepsItAlive() async {
        let database = Database.seededPlayers()
        var snapshots = database.collection("players").observe(byScore).snapshots.makeAsyncIterator()
        let first = await snapshots.next()
        XCTAssertEqual(first?.documents.map(\.id), ["lovelace", "turing", "gauss"])
        XCTAssertEqual(first?.diff, LiveQueryDiff())
        database.apply(.added(key("shannon"), ["score": 20]))
        let second = await snapshots.next()
        XCTAssertEqual(second?.documents.map(\.id), ["lovelace", "shannon", "turing", "gauss"])
        XCTAssertEqual(second?.diff, LiveQueryDiff(inserted: [1]))
    }

    func testAConsumerThatKeepsUpGetsEverySnapshotInOrder() async {
        let database = Database.seededPlayers()
        let live = database.collection("players").observe(byScore)
        var snapshots = live.snapshots.makeAsyncIterator()
        _ = await snapshots.next()
        database.apply(.removed(key("turing")))
        let removal = await snapshots.next()
        XCTAssertEqual(removal?.diff, LiveQueryDiff(removed: [1]))
        database.apply(.changed(key("gauss"), ["score": 30], cleared: []))
        let move = await snapshots.next()
        XCTAssertEqual(move?.documents.map(\.id), ["gauss", "lovelace"])
        // A swap of two is one move (either document may be the one reported), and gauss is updated.
        XCTAssertEqual(move?.diff.moved.count, 1)
        XCTAssertEqual(move?.diff.updated, [0])
        XCTAssertEqual(move?.diff.inserted, [])
        XCTAssertEqual(move?.diff.removed, [])
    }

    func testASlowConsumerGetsTheNewestSnapshotWithTheDiffFromWhatItSawLast() async {
        let database = Database.seededPlayers()
        let live = database.collection("players").observe(byScore)
        var snapshots = live.snapshots.makeAsyncIterator()
        _ = await snapshots.next()
        // Three commits while the consumer is not taking anything: it keeps one pending snapshot, the newest.
        database.apply(.added(key("shannon"), ["score": 20]))
        database.apply(.removed(key("gauss")))
        database.apply(.changed(key("lovelace"), ["score": 1], cleared: []))
        database.notificationQueue.sync {}
        database.observerQueue.sync {}
        let coalesced = await snapshots.next()
        XCTAssertEqual(coalesced?.documents.map(\.id), ["shannon", "turing", "lovelace"])
        // Against [lovelace, turing, gauss]: gauss removed, shannon inserted, lovelace moved to the end and updated.
        XCTAssertEqual(coalesced?.diff.removed, [2])
        XCTAssertEqual(coalesced?.diff.inserted, [0])
        XCTAssertEqual(coalesced?.diff.moved, [.init(from: 0, to: 2)])
        XCTAssertEqual(coalesced?.diff.updated, [2])
        // Nothing older is still queued: the next snapshot is the next commit.
        database.apply(.changed(key("turing"), ["score": 16], cleared: []))
        let next = await snapshots.next()
        XCTAssertEqual(next?.diff, LiveQueryDiff(updated: [1]))
    }

    func testStoppingTheLiveQueryEndsTheIteration() async {
        let database = Database.seededPlayers()
        let live = database.collection("players").observe(byScore)
        var snapshots = live.snapshots.makeAsyncIterator()
        _ = await snapshots.next()
        live.stop()
        let end = await snapshots.next()
        XCTAssertNil(end)
    }

    func testCancellingTheIteratingTaskEndsTheIteration() async {
        let database = Database.seededPlayers()
        let live = database.collection("players").observe(byScore)
        let sawFirst = expectation(description: "first snapshot")
        let ended = expectation(description: "iteration ended")
        let task = Task {
            for await _ in live.snapshots { sawFirst.fulfill() }
            ended.fulfill()
        }
        await fulfillment(of: [sawFirst], timeout: 5)
        task.cancel()
        await fulfillment(of: [ended], timeout: 5)
    }
}
