import EJSON
import XCTest

@testable import MeteorDDP

/// Many readers and a writer at once (also run under `swift test --sanitize=thread`).
final class DatabaseConcurrencyTests: XCTestCase {
    func testReadersNeverSeeHalfATransaction() {
        let database = Database()
        let a = DocumentKey(collectionName: "c", documentID: "a")
        let b = DocumentKey(collectionName: "c", documentID: "b")
        database.apply([.added(a, ["n": 0]), .added(b, ["n": 0])])
        let writes = 2_000
        let torn = ManagedCounter()
        let writerDone = ManagedFlag()
        let finished = DispatchSemaphore(value: 0)
        // Dedicated threads (not the shared pool), so the writer is never starved by spinning readers.
        // The writer starts once both readers are reading, so reads really overlap the writes.
        let readersStarted = DispatchSemaphore(value: 0)
        for _ in 0..<2 {
            Thread {
                var first = true
                repeat {
                    // Both documents are written in every transaction: one snapshot shows both or neither.
                    let snapshot = database.snapshot
                    if snapshot.document(a)?["n"] != snapshot.document(b)?["n"] { torn.increment() }
                    if first {
                        readersStarted.signal()
                        first = false
                    }
                } while !writerDone.isSet
                finished.signal()
            }.start()
        }
        Thread {
            for _ in 0..<2 { readersStarted.wait() }
            for i in 1...writes {
                database.performUpdates {
                    database.apply(.changed(a, ["n": .number(Double(i))], cleared: []))
                    database.apply(.changed(b, ["n": .number(Double(i))], cleared: []))
                }
            }
            writerDone.set()
            finished.signal()
        }.start()
        for _ in 0..<3 { XCTAssertEqual(finished.wait(timeout: .now() + 60), .success) }
        XCTAssertEqual(torn.value, 0)
        XCTAssertEqual(database.document(a)?["n"], .number(Double(writes)))
    }

    func testWholeCollectionReadsKeepTheirSnapshotAliveWhileWritersReplaceIt() {
        // A read of a whole collection walks a table after taking it from the current snapshot: the snapshot (which
        // owns the table's memory) must live until the walk ends, or a commit frees the buckets under the reader.
        let database = Database()
        let keys = (0..<64).map { DocumentKey(collectionName: "c", documentID: "d\($0)") }
        database.apply(keys.map { .added($0, ["n": 0]) })
        let writerDone = ManagedFlag()
        let finished = DispatchSemaphore(value: 0)
        let collection = database.collection("c")
        let readersStarted = DispatchSemaphore(value: 0)
        for _ in 0..<2 {
            Thread {
                var first = true
                repeat {
                    XCTAssertEqual(collection.documents.count, 64)
                    XCTAssertEqual(collection.find(Query()).count, 64)
                    XCTAssertEqual(collection.count, 64)
                    if first {
                        readersStarted.signal()
                        first = false
                    }
                } while !writerDone.isSet
                finished.signal()
            }.start()
        }
        Thread {
            for _ in 0..<2 { readersStarted.wait() }
            for i in 1...20_000 {
                database.apply(.changed(keys[i % keys.count], ["n": .number(Double(i))], cleared: []))
            }
            writerDone.set()
            finished.signal()
        }.start()
        for _ in 0..<3 { XCTAssertEqual(finished.wait(timeout: .now() + 60), .success) }
    }

    func testWritersOnManyThreadsAreSerialisedAndNothingIsLost() {
        let database = Database()
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for i in 0..<250 {
                database.apply(
                    .added(DocumentKey(collectionName: "c", documentID: "\(thread)-\(i)"), ["i": .number(Double(i))]))
            }
        }
        XCTAssertEqual(database.collection("c").count, 2000)
    }
}
