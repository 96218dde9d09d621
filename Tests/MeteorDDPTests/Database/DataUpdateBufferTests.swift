import EJSON
import XCTest

@testable import MeteorDDP

final class DataUpdateBufferTests: XCTestCase {
    private func key(_ id: String) -> DocumentKey { DocumentKey(collectionName: "players", documentID: id) }

    private func flushed(_ buffer: DataUpdateBuffer) {
        let done = expectation(description: "flushed")
        buffer.performAfterFlush { done.fulfill() }
        wait(for: [done], timeout: 5)
    }

    func testUpdatesEnqueuedBeforeAFlushLandInOneTransactionAndOneNotification() {
        let database = Database()
        let recorder = ChangesRecorder(database)
        // A long debounce: nothing flushes until the after-flush request asks for it.
        let buffer = DataUpdateBuffer(database: database, interval: .seconds(60), maxAge: .seconds(60))
        for i in 0..<1000 { buffer.enqueue(.added(key("p\(i)"), ["score": .number(Double(i))])) }
        flushed(buffer)
        XCTAssertEqual(recorder.changes.count, 1)
        XCTAssertEqual(recorder.changes.first?.affectedDocumentKeys.count, 1000)
        XCTAssertEqual(database.collection("players").count, 1000)
    }

    func testAFullBatchIsAppliedWithoutWaitingForTheDebounce() {
        // A long debounce: only the size bound applies anything before the after-flush request. (Below the bound a
        // batch waits: testUpdatesEnqueuedBeforeAFlushLandInOneTransactionAndOneNotification.)
        let database = Database()
        let recorder = ChangesRecorder(database)
        let buffer = DataUpdateBuffer(
            database: database, interval: .seconds(60), maxAge: .seconds(60), maxBatchSize: 100)
        for batch in 0..<2 {
            let applied = expectation(forNotification: .databaseDidChange, object: database)
            for i in 0..<100 { buffer.enqueue(.added(key("p\(batch)-\(i)"), ["score": .number(Double(i))])) }
            wait(for: [applied], timeout: 5)
            XCTAssertEqual(database.collection("players").count, 100 * (batch + 1))
        }
        for i in 0..<50 { buffer.enqueue(.added(key("q\(i)"), [:])) }
        flushed(buffer)
        XCTAssertEqual(database.collection("players").count, 250)
        XCTAssertEqual(recorder.changes.map { $0.affectedDocumentKeys.count }, [100, 100, 50])
    }

    func testWhileHeldAFullBatchWaitsForTheRelease() {
        let database = Database()
        let recorder = ChangesRecorder(database)
        let buffer = DataUpdateBuffer(
            database: database, interval: .seconds(60), maxAge: .seconds(60), maxBatchSize: 100)
        buffer.hold(resetting: false)
        for i in 0..<250 { buffer.enqueue(.added(key("p\(i)"), [:])) }
        buffer.queue.sync {}
        XCTAssertEqual(database.collection("players").count, 0)
        buffer.release()
        flushed(buffer)
        XCTAssertEqual(database.collection("players").count, 250)
        XCTAssertEqual(recorder.changes.count, 1, "a release applies everything held in one transaction")
    }

    func testABatchFlushesByItselfOnceItsMaxAgeHasPassed() {
        // The debounce runs on the scheduler's clock: nothing waits in real time.
        let database = Database()
        let scheduler = ManualScheduler()
        let buffer = DataUpdateBuffer(
            database: database, interval: .milliseconds(5), maxAge: .milliseconds(20), scheduler: scheduler)
        // The clock moves a millisecond at a time, and the buffer's queue finishes what each step's timer handed it
        // before the next: a timer's work never reads a clock that has already moved on (which re-armed the next
        // timer late, past the end of a single long advance: a rare failure of this test on a loaded machine).
        func advance(milliseconds: Int) {
            for _ in 0..<milliseconds {
                scheduler.advance(by: .milliseconds(1))
                buffer.queue.sync {}
            }
        }
        buffer.enqueue(.added(key("a"), [:]))
        buffer.queue.sync {}
        for _ in 0..<4 {
            advance(milliseconds: 4) // a new update every 4 ms keeps the 5 ms interval from passing
            buffer.enqueue(.added(key("b"), [:]))
            buffer.queue.sync {}
            XCTAssertNil(database.document(key("a")), "still waiting for more")
        }
        advance(milliseconds: 3)
        XCTAssertNil(database.document(key("a")), "19 ms: neither the interval (21 ms) nor the max age has passed")
        advance(milliseconds: 1) // 20 ms since the first update: its max age, before the interval
        XCTAssertNotNil(database.document(key("a")))
        XCTAssertNotNil(database.document(key("b")))
    }

    func testWhileHeldNothingIsAppliedAndTheReleaseAppliesEverythingAtOnce() {
        let database = Database()
        let recorder = ChangesRecorder(database)
        let buffer = DataUpdateBuffer(database: database, interval: .zero)
        buffer.hold(resetting: false)
        buffer.enqueue(.added(key("a"), ["score": 1]))
        buffer.enqueue(.added(key("b"), ["score": 2]))
        buffer.flush()
        XCTAssertNil(database.document(key("a")), "held")
        XCTAssertEqual(recorder.changes.count, 0)
        let afterRelease = expectation(description: "after-flush callback waits for the release")
        buffer.performAfterFlush { afterRelease.fulfill() }
        buffer.release()
        wait(for: [afterRelease], timeout: 5)
        XCTAssertEqual(recorder.changes.count, 1)
        XCTAssertEqual(recorder.changes.first?.affectedDocumentKeys.count, 2)
    }

    func testAResettingReleaseReportsOnlyRealDifferencesWithoutFlicker() {
        let database = Database()
        let buffer = DataUpdateBuffer(database: database, interval: .zero)
        buffer.enqueue(.added(key("lovelace"), ["score": 25]))
        buffer.enqueue(.added(key("gauss"), ["score": 5]))
        buffer.enqueue(.added(key("turing"), ["score": 7]))
        flushed(buffer)
        let recorder = ChangesRecorder(database)
        buffer.hold(resetting: true)
        buffer.enqueue(.added(key("lovelace"), ["score": 30]))
        buffer.enqueue(.added(key("turing"), ["score": 7]))
        buffer.release()
        flushed(buffer)
        XCTAssertEqual(recorder.changes.count, 1)
        let changes = recorder.changes[0]
        XCTAssertEqual(changes.changeDetails(for: key("lovelace"))?.changeType, .update)
        XCTAssertEqual(changes.changeDetails(for: key("gauss"))?.changeType, .remove)
        XCTAssertNil(changes.changeDetails(for: key("turing")), "unchanged documents produce no entry at all")
    }

    func testAfterFlushCallbacksRunAfterTheUpdatesBeforeThemAreVisible() {
        let database = Database()
        let buffer = DataUpdateBuffer(database: database, interval: .seconds(60))
        buffer.enqueue(.added(key("a"), ["score": 1]))
        let visible = expectation(description: "visible")
        let a = key("a")
        buffer.performAfterFlush {
            XCTAssertNotNil(database.document(a))
            visible.fulfill()
        }
        wait(for: [visible], timeout: 5)
    }

    func testAFloodOfUpdatesIsAppliedInFewBatches() {
        let database = Database()
        let recorder = ChangesRecorder(database)
        // On a clock that never moves, only the size bound and the final request flush: every batch but the last
        // holds at least 5,000 updates (more when the buffer's queue is slow to take it), so 20,000 updates make at
        // most four, whatever the speed of either thread (the exact sizes: testAFullBatchIsAppliedWithoutWaiting…).
        let buffer = DataUpdateBuffer(database: database, maxBatchSize: 5_000, scheduler: ManualScheduler())
        for i in 0..<20_000 { buffer.enqueue(.added(key("p\(i % 500)"), ["n": .number(Double(i))])) }
        flushed(buffer)
        XCTAssertTrue((1...4).contains(recorder.changes.count), "\(recorder.changes.count) batches")
        XCTAssertEqual(database.collection("players").count, 500)
        XCTAssertEqual(database.document(key("p499"))?["n"], 19_999)
    }

    /// A large batch enqueued at once is packed on two threads: the cache ends as the same updates applied one by one.
    func testALargeBatchEnqueuedAtOnceEndsAsTheSameUpdatesAppliedOneByOne() {
        let updates: [DataUpdate] = (0..<(2 * VersionPreparation.minimumBatch + 1)).map { n in
            let id = "p\(n % 300)"
            switch n % 5 {
            case 0: return .added(key(id), ["n": .number(Double(n))])
            case 1, 2: return .changed(key(id), ["n": .number(Double(n)), "extra": true], cleared: [])
            case 3: return .changed(key(id), ["tag": .string("t\(n)")], cleared: ["extra"])
            default: return n % 2 == 0 ? .removed(key(id)) : .replaced(key(id), ["n": 0])
            }
        }
        let oneByOne = Database()
        for update in updates { oneByOne.apply(update) }
        let database = Database()
        let buffer = DataUpdateBuffer(database: database, interval: .seconds(60), maxAge: .seconds(60))
        buffer.enqueue(contentsOf: updates)
        flushed(buffer)
        let expected = oneByOne.collection("players").documents.sorted { $0.id < $1.id }
        let actual = database.collection("players").documents.sorted { $0.id < $1.id }
        XCTAssertFalse(expected.isEmpty)
        XCTAssertEqual(actual.map(\.id), expected.map(\.id))
        for (document, reference) in zip(actual, expected) {
            XCTAssertEqual(document.fields, reference.fields, document.id)
        }
    }
}
