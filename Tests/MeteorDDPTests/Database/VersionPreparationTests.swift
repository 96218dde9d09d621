import EJSON
import XCTest

@testable import MeteorDDP

/// Large batches have their new versions made on a second thread: what is written, and what is reported, must be
/// exactly what applying the updates one at a time gives, whatever the helper got to.
final class VersionPreparationTests: XCTestCase {
    private func key(_ i: Int) -> DocumentKey { DocumentKey(collectionName: "items", documentID: "item\(i)") }

    /// Every kind of update, documents written several times in the batch, anomalies (an add for an existing
    /// document, a change for a missing one, a remove for a missing one), and changes that change nothing.
    private func mixedBatch(count: Int) -> [DataUpdate] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { n in
            let i = Int.random(in: 0..<300, using: &generator)
            switch n % 7 {
            case 0: return .added(key(i), ["n": .number(Double(n)), "tag": .string("a\(i % 5)")])
            case 1, 2: return .changed(key(i), ["n": .number(Double(n))], cleared: [])
            case 3: return .changed(key(i), ["tag": .string("a\(i % 5)")], cleared: ["extra"])
            case 4: return .changed(key(i), ["extra": true], cleared: [])
            case 5: return n % 3 == 0 ? .removed(key(i)) : .replaced(key(i), ["n": 0, "tag": "r"])
            default: return .added(key(i + 300), ["n": .number(Double(n))])
            }
        }
    }

    private func seeded() -> Database {
        let database = Database()
        database.apply((0..<200).map { DataUpdate.added(key($0), ["n": 0, "tag": .string("a\($0 % 5)")]) })
        return database
    }

    private func state(_ database: Database) -> [String: EJSONObject] {
        Dictionary(uniqueKeysWithValues: database.collection("items").documents.map { ($0.id, $0.fields) })
    }

    func testALargeBatchWritesAndReportsWhatOneUpdateAtATimeDoes() {
        for round in 0..<5 {
            let batch = mixedBatch(count: 4 * VersionPreparation.minimumBatch)
            let batched = seeded()
            let oneByOne = seeded()
            let batchedChanges = ChangesRecorder(batched)
            let oneByOneChanges = ChangesRecorder(oneByOne)
            batched.apply(batch)
            oneByOne.performUpdates {
                for update in batch { oneByOne.apply(update) }
            }
            XCTAssertEqual(state(batched), state(oneByOne), "round \(round)")
            XCTAssertEqual(batchedChanges.changes, oneByOneChanges.changes, "round \(round)")
            XCTAssertEqual(
                batchedChanges.changes.first?.affectedDocumentKeys, oneByOneChanges.changes.first?.affectedDocumentKeys)
        }
    }

    /// A large batch is packed on two threads: each update in its place, packed as it is alone.
    func testALargeBatchIsPackedInOrderAsEachUpdateIsAlone() {
        func parts(_ update: CacheUpdate) -> (kind: String, key: DocumentKey, fields: EJSONObject?, cleared: [String]) {
            switch update {
            case .added(let key, let document): ("added", key, document.fields, [])
            case .changed(let key, let document, let cleared): ("changed", key, document.fields, cleared)
            case .replaced(let key, let document): ("replaced", key, document?.fields, [])
            case .removed(let key): ("removed", key, nil, [])
            }
        }
        let batch = mixedBatch(count: 2 * VersionPreparation.minimumBatch + 1)
        let packed = CacheUpdate.packing(batch)
        XCTAssertEqual(packed.count, batch.count)
        for (index, (update, cached)) in zip(batch, packed).enumerated() {
            let expected = parts(CacheUpdate(update))
            let actual = parts(cached)
            XCTAssertEqual(actual.kind, expected.kind, "update \(index)")
            XCTAssertEqual(actual.key, expected.key, "update \(index)")
            XCTAssertEqual(actual.fields, expected.fields, "update \(index)")
            XCTAssertEqual(actual.cleared, expected.cleared, "update \(index)")
        }
    }

    func testABatchInsideATransactionThatAlreadyWroteItsDocumentsBuildsOnThoseWrites() {
        let database = seeded()
        let recorder = ChangesRecorder(database)
        let batch = (0..<VersionPreparation.minimumBatch).map {
            DataUpdate.changed(key($0 % 200), ["seen": true], cleared: [])
        }
        database.performUpdates {
            // Written after the snapshot the helper reads: its versions were made from versions no longer current.
            for i in 0..<200 { database.apply(.changed(key(i), ["n": .number(Double(i))], cleared: [])) }
            database.apply(batch)
        }
        for i in 0..<200 {
            XCTAssertEqual(
                database.document(key(i)).map { EJSONValue.object($0.fields) },
                ["n": .number(Double(i)), "tag": .string("a\(i % 5)"), "seen": true])
        }
        XCTAssertEqual(recorder.changes.count, 1)
        XCTAssertEqual(recorder.changes.first?.count, 200)
        // item0 had n = 0 already: it gains only `seen`.
        XCTAssertEqual(recorder.changes.first?.changeDetails(for: key(0))?.changedFields, ["seen": .set(true)])
        XCTAssertEqual(
            recorder.changes.first?.changeDetails(for: key(7))?.changedFields, ["n": .set(7), "seen": .set(true)])
    }

    func testTheHelperMakesEachVersionFromTheSnapshotAndTheWriterTakesOnlyMatchingOnes() {
        let database = seeded()
        let snapshotBefore = database.collection("items").document(id: "item1")!
        var updates: [CacheUpdate] = (0..<(3 * VersionPreparation.chunkSize)).map { n in
            CacheUpdate(
                n == 0
                    ? .added(key(1000), ["fresh": true])
                    : .changed(key(n % 200), ["n": .number(Double(n))], cleared: []))
        }
        do {
            let preparation = VersionPreparation(batch: CacheUpdateBatch(moving: &updates), snapshot: database.snapshot)
            preparation.waitForHelper()
            for chunk in 0..<3 { XCTAssertEqual(preparation.claimForWriter(chunk), .prepared) }
            // A new document's update carries the document itself: nothing is made for it.
            XCTAssertNil(preparation.version(at: 0))
            let changed = preparation.version(at: 1)
            XCTAssertEqual(changed?.document(for: snapshotBefore)?["n"], 1)
            // Another version of the same document (equal or not) is not the one it was made from.
            XCTAssertNil(changed?.document(for: snapshotBefore.setting(["n": 5])))
            XCTAssertNil(changed?.document(for: Document(id: "item1", fields: snapshotBefore.fields)))
            preparation.finish()
        }
    }

    func testEveryChunkGrantedToTheWriterHasItsVersionsAndFinishingReturns() {
        let database = seeded()
        var updates = (0..<VersionPreparation.minimumBatch).map {
            CacheUpdate(.changed(key($0 % 200), ["n": 1], cleared: []))
        }
        do {
            let preparation = VersionPreparation(batch: CacheUpdateBatch(moving: &updates), snapshot: database.snapshot)
            // Racing the helper: whichever chunks it finished first are granted, complete; the others are the writer's.
            for chunk in 0..<preparation.chunkCount
            where preparation.claimForWriter(chunk) == .prepared {
                let start = chunk * VersionPreparation.chunkSize
                for index in start..<(start + VersionPreparation.chunkSize) {
                    XCTAssertEqual(preparation.version(at: index)?.document.fields["n"], 1)
                }
            }
            // Returns whether the helper is running, finished, or never started.
            preparation.finish()
        }
    }

    /// The writer gives up on a chunk the helper holds too long, and finishing returns at once while the helper is
    /// still inside that chunk: the helper keeps the batch alive (before, `finish()` waited on a semaphore for it).
    func testTheWriterStopsWaitingForAStalledHelperAndFinishesWithoutWaitingForIt() {
        let database = seeded()
        var updates = (0..<VersionPreparation.minimumBatch).map {
            CacheUpdate(.changed(key($0 % 200), ["n": 1], cleared: []))
        }
        let claimedFirst = DispatchSemaphore(value: 0)
        let resume = DispatchSemaphore(value: 0)
        var batch: CacheUpdateBatch? = CacheUpdateBatch(moving: &updates)
        weak var weakBatch = batch
        var preparation: VersionPreparation? = VersionPreparation(batch: batch!, snapshot: database.snapshot) { chunk in
            guard chunk == 0 else { return }
            claimedFirst.signal()
            resume.wait()
        }
        batch = nil
        // The helper holds chunk 0 and does not get on with it: the writer gives up on it, then takes the rest.
        XCTAssertEqual(claimedFirst.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(preparation?.claimForWriter(0), .helperStillMaking)
        XCTAssertEqual(preparation?.claimForWriter(1), .writers, "unclaimed: the writer's own")
        let finished = expectation(description: "finish() returned with the helper still inside chunk 0")
        DispatchQueue.global().async { [preparation] in
            preparation?.finish()
            finished.fulfill()
        }
        wait(for: [finished], timeout: 10)
        preparation = nil
        XCTAssertNotNil(weakBatch, "the writer let go: the helper, still reading, keeps the batch alive")
        resume.signal()
    }
}
