import EJSON
import XCTest

@testable import MeteorDDP

/// Snapshot generations own the cache's memory: an old snapshot keeps reading what it saw for as long as it is held,
/// and every version is freed once nothing can read it.
final class SnapshotGenerationTests: XCTestCase {
    private let key = DocumentKey(collectionName: "c", documentID: "a")

    /// The storage of the document the database holds now, weakly (no strong reference from the test).
    private func currentStorage(_ database: Database) -> Document.Storage? {
        database.document(key)?.storage
    }

    func testAHeldSnapshotKeepsReadingWhatItSawAndKeepsLaterVersionsUntilItGoes() {
        let database = Database()
        database.apply(.added(key, ["n": 0]))
        var held: DatabaseSnapshot? = database.snapshot
        weak var intermediate: Document.Storage?
        database.apply(.changed(key, ["n": 1], cleared: []))
        intermediate = currentStorage(database)
        database.apply(.changed(key, ["n": 2], cleared: []))
        database.notificationQueue.sync {}
        database.observerQueue.sync {}
        XCTAssertEqual(held?.document(key)?["n"], 0)
        XCTAssertEqual(database.document(key)?["n"], 2)
        // Generations are freed oldest first: the held one keeps every later one, and what they retired, alive.
        XCTAssertNotNil(intermediate)
        held = nil
        XCTAssertNil(intermediate)
    }

    func testEveryVersionIsFreedOnceNoSnapshotCanReadIt() {
        var database: Database? = Database()
        weak var first: Document.Storage?
        weak var last: Document.Storage?
        database!.apply(.added(key, ["n": 0]))
        first = currentStorage(database!)
        var held: DatabaseSnapshot? = database!.snapshot
        for n in 1...100 { database!.apply(.changed(key, ["n": .number(Double(n))], cleared: [])) }
        last = currentStorage(database!)
        database!.notificationQueue.sync {}
        database!.observerQueue.sync {}
        XCTAssertNotNil(first, "the held snapshot can still read the first version")
        XCTAssertEqual(held?.document(key)?["n"], 0)
        held = nil
        XCTAssertNil(first, "freed with the last snapshot that could read it")
        XCTAssertNotNil(last)
        let queue = database!.notificationQueue
        database = nil
        queue.sync {}
        XCTAssertNil(last, "the newest version goes with the database")
    }

    func testALongChainOfGenerationsIsFreedWithoutRecursion() {
        let database = Database()
        database.apply(.added(key, ["n": 0]))
        weak var first: Document.Storage?
        first = currentStorage(database)
        var held: DatabaseSnapshot? = database.snapshot
        // Each transaction is a generation that the held one keeps alive; freeing them must not recurse per generation.
        for n in 1...100_000 {
            database.apply(.changed(key, ["n": .number(Double(n % 2))], cleared: []))
        }
        database.notificationQueue.sync {}
        database.observerQueue.sync {}
        XCTAssertEqual(held?.document(key)?["n"], 0)
        held = nil
        XCTAssertNil(first)
        XCTAssertEqual(database.document(key)?["n"], 0)
    }

    func testReadersRacingTheWriterAlwaysFindEveryDocument() {
        let database = Database()
        let keys = (0..<200).map { DocumentKey(collectionName: "c", documentID: "d\($0)") }
        database.apply(keys.map { .added($0, ["n": 0]) })
        let stop = ManagedFlag()
        let missing = ManagedCounter()
        let done = DispatchSemaphore(value: 0)
        for reader in 0..<2 {
            Thread {
                var i = reader
                while !stop.isSet {
                    if database.document(keys[i % keys.count]) == nil { missing.increment() }
                    i += 7
                }
                done.signal()
            }.start()
        }
        // Every transaction rewrites every document and grows or shrinks the collection, retiring buckets and
        // directories that readers may be in the middle of.
        for round in 1...300 {
            database.performUpdates {
                for key in keys { database.apply(.changed(key, ["n": .number(Double(round))], cleared: [])) }
                let extra = (0..<50).map { DocumentKey(collectionName: "c", documentID: "x\($0)") }
                for key in extra { database.apply(round % 2 == 0 ? .added(key, [:]) : .removed(key)) }
            }
        }
        stop.set()
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(missing.value, 0)
        XCTAssertEqual(database.document(keys[0])?["n"], 300)
    }
}
