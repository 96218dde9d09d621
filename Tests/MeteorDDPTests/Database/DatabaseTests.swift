import EJSON
import XCTest

@testable import MeteorDDP

final class DatabaseTests: XCTestCase {
    private let lovelace = DocumentKey(collectionName: "players", documentID: "lovelace")
    private let gauss = DocumentKey(collectionName: "players", documentID: "gauss")
    private let shannon = DocumentKey(collectionName: "players", documentID: "shannon")

    private func seeded() -> Database {
        let database = Database()
        database.apply([
            .added(lovelace, ["name": "Ada Lovelace", "score": 25, "color": "blue"]),
            .added(gauss, ["name": "Carl Friedrich Gauss", "score": 5])
        ])
        return database
    }

    func testApplyingAnAddPostsAnAddAndStoresTheDocument() {
        let database = Database()
        let recorder = ChangesRecorder(database)
        database.apply(.added(lovelace, ["name": "Ada Lovelace", "score": 25]))
        XCTAssertEqual(database.document(lovelace)?["score"], 25)
        XCTAssertEqual(recorder.changes.count, 1)
        XCTAssertEqual(recorder.changes.first?.changeDetails(for: lovelace)?.changeType, .add)
    }

    func testApplyingAChangeSetsFieldsAndClearsOthers() {
        let database = seeded()
        let recorder = ChangesRecorder(database)
        database.apply(.changed(lovelace, ["score": 30], cleared: ["color"]))
        XCTAssertEqual(
            database.document(lovelace).map { EJSONValue.object($0.fields) }, ["name": "Ada Lovelace", "score": 30])
        XCTAssertEqual(
            recorder.changes.first?.changeDetails(for: lovelace)?.changedFields, ["score": .set(30), "color": .removed])
    }

    func testAChangeToTheValuesAlreadyThereIsNoChange() {
        let database = seeded()
        let recorder = ChangesRecorder(database)
        database.apply([
            .changed(lovelace, ["score": 25], cleared: ["missing"]), .changed(gauss, ["score": 6], cleared: [])
        ])
        database.apply(.changed(lovelace, ["name": "Ada Lovelace"], cleared: []))
        database.apply(.added(gauss, ["score": 6]))
        // Written twice in one transaction, back where it started: no entry either.
        database.performUpdates {
            database.apply(.changed(lovelace, ["score": 99], cleared: []))
            database.apply(.changed(lovelace, ["score": 25], cleared: []))
            database.apply(.changed(gauss, ["name": "Gauss"], cleared: []))
        }
        let changes = recorder.changes
        XCTAssertEqual(changes.count, 2)
        XCTAssertEqual(changes.first?.affectedDocumentKeys, [gauss])
        XCTAssertEqual(changes.first?.changeDetails(for: gauss)?.changedFields, ["score": .set(6)])
        XCTAssertEqual(changes.last?.affectedDocumentKeys, [gauss])
        XCTAssertEqual(changes.last?.changeDetails(for: gauss)?.changedFields, ["name": .set("Gauss")])
    }

    func testApplyingARemovePostsARemoveAndDropsTheDocument() {
        let database = seeded()
        let recorder = ChangesRecorder(database)
        database.apply(.removed(lovelace))
        XCTAssertNil(database.document(lovelace))
        XCTAssertEqual(recorder.changes.first?.changeDetails(for: lovelace)?.changeType, .remove)
    }

    func testStoreIsTolerantLikeMeteorsClientStore() {
        let database = seeded()
        database.apply(.added(lovelace, ["score": 99]))
        XCTAssertEqual(database.document(lovelace)?["score"], 99, "an add for an existing document acts as a change")
        XCTAssertEqual(database.document(lovelace)?["name"], "Ada Lovelace")
        database.apply(.changed(shannon, ["name": "Claude Shannon"], cleared: []))
        XCTAssertEqual(
            database.document(shannon)?["name"], "Claude Shannon", "a change for a missing document acts as an add")
        let recorder = ChangesRecorder(database)
        database.apply(.removed(DocumentKey(collectionName: "players", documentID: "nobody")))
        XCTAssertEqual(recorder.changes.count, 0, "a removal of a missing document is ignored")
        XCTAssertEqual(database.collection("players").count, 3, "nothing else was lost")
    }

    func testSeparateTransactionsPostSeparateNotifications() {
        let database = seeded()
        let recorder = ChangesRecorder(database)
        database.performUpdates { database.apply(.changed(lovelace, ["score": 26], cleared: [])) }
        database.performUpdates { database.apply(.changed(lovelace, ["score": 27], cleared: [])) }
        XCTAssertEqual(recorder.changes.count, 2)
    }

    func testSeveralUpdatesOfOneDocumentInATransactionPostOneConsolidatedNotification() {
        let database = seeded()
        let recorder = ChangesRecorder(database)
        database.performUpdates {
            database.apply(.changed(lovelace, ["score": 30], cleared: []))
            database.apply(.changed(lovelace, [:], cleared: ["color"]))
        }
        XCTAssertEqual(recorder.changes.count, 1)
        XCTAssertEqual(
            recorder.changes.first?.changeDetails(for: lovelace)?.changedFields, ["score": .set(30), "color": .removed])
    }

    func testUpdatesOfDifferentDocumentsInATransactionPostOneNotificationWithEveryDocument() {
        let database = seeded()
        let recorder = ChangesRecorder(database)
        database.performUpdates {
            database.apply(.added(shannon, ["name": "Claude Shannon"]))
            database.apply(.changed(lovelace, ["score": 30], cleared: []))
            database.apply(.removed(gauss))
        }
        XCTAssertEqual(recorder.changes.count, 1)
        XCTAssertEqual(recorder.changes.first?.affectedDocumentKeys, [shannon, lovelace, gauss])
        XCTAssertEqual(recorder.changes.first?.documentChangeDetails.map(\.changeType), [.add, .update, .remove])
    }

    func testNestedTransactionsFoldIntoTheOutermost() {
        let database = seeded()
        let recorder = ChangesRecorder(database)
        database.performUpdates {
            database.apply(.changed(lovelace, ["score": 30], cleared: []))
            database.performUpdates { database.apply(.changed(gauss, ["score": 6], cleared: [])) }
            XCTAssertEqual(recorder.changes.count, 0, "nothing is posted before the outermost transaction ends")
        }
        XCTAssertEqual(recorder.changes.count, 1)
        XCTAssertEqual(recorder.changes.first?.affectedDocumentKeys.count, 2)
    }

    func testADocumentChangedAndChangedBackPostsNothing() {
        let database = seeded()
        let recorder = ChangesRecorder(database)
        database.performUpdates {
            database.apply(.changed(lovelace, ["score": 30], cleared: []))
            database.apply(.changed(lovelace, ["score": 25], cleared: []))
        }
        XCTAssertEqual(recorder.changes.count, 0)
    }

    func testADocumentRemovedAndAddedBackInATransactionHasOneEntryFromItsFirstVersionToItsLast() {
        let database = seeded()
        let recorder = ChangesRecorder(database)
        database.performUpdates {
            database.apply(.changed(lovelace, ["score": 30], cleared: []))
            database.apply(.removed(lovelace))
            database.apply(.added(lovelace, ["name": "Ada", "score": 31]))
            database.apply(.added(shannon, ["name": "Claude Shannon"]))
            database.apply(.removed(shannon))
            database.apply(.removed(gauss))
            database.apply(.added(gauss, ["name": "Carl Friedrich Gauss", "score": 5]))
        }
        XCTAssertEqual(recorder.changes.count, 1)
        let changes = recorder.changes.first
        XCTAssertEqual(changes?.affectedDocumentKeys, [lovelace], "shannon came and went, gauss is back as he was")
        XCTAssertEqual(changes?.changeDetails(for: lovelace)?.changeType, .update)
        XCTAssertEqual(
            changes?.changeDetails(for: lovelace)?.fieldsBefore, ["name": "Ada Lovelace", "score": 25, "color": "blue"])
        XCTAssertEqual(
            changes?.changeDetails(for: lovelace)?.changedFields,
            ["name": .set("Ada"), "score": .set(31), "color": .removed])
    }

    func testTheWritingThreadReadsItsUncommittedStateAndOthersDoNot() {
        let database = seeded()
        let otherThreadSaw = expectation(description: "other thread read")
        let lovelace = self.lovelace
        database.performUpdates {
            database.apply(.changed(lovelace, ["score": 99], cleared: []))
            XCTAssertEqual(database.document(lovelace)?["score"], 99)
            DispatchQueue.global().async {
                XCTAssertEqual(database.document(lovelace)?["score"], 25, "a reader never sees half a transaction")
                otherThreadSaw.fulfill()
            }
            wait(for: [otherThreadSaw], timeout: 5)
        }
        XCTAssertEqual(database.document(lovelace)?["score"], 99)
    }

    func testRecordingOriginalsReportsEachWrittenDocumentsVersionFromBefore() {
        let database = seeded()
        let originals = database.performUpdatesRecordingOriginals {
            database.apply(.changed(lovelace, ["score": 30], cleared: []))
            database.apply(.changed(lovelace, ["score": 31], cleared: []))
            database.apply(.added(shannon, ["name": "Claude Shannon"]))
        }.originals
        XCTAssertEqual(originals.map(\.0), [lovelace, shannon])
        XCTAssertEqual(originals.first?.1?["score"], 25)
        XCTAssertNil(originals.last?.1 ?? nil)
    }

    func testRecordingReadsNotesLookupsWholeCollectionsAndListingsNestedPartsIncluded() {
        let database = seeded()
        var inner: CacheReads?
        let outer = database.performUpdatesRecordingOriginals(recordingReads: true) {
            _ = database.document(lovelace)
            _ = database.collection("teams").find(Query())
            inner =
                database.performUpdatesRecordingOriginals(recordingReads: true) {
                    _ = database.collection("scores").document(id: "x")
                }.reads
            // A part that does not record its own reads still reads for the enclosing one.
            _ = database.performUpdatesRecordingOriginals { _ = database.collection("games").count }
        }.reads
        XCTAssertEqual(inner, CacheReads(documents: [DocumentKey(collectionName: "scores", documentID: "x")]))
        XCTAssertEqual(
            outer,
            CacheReads(
                documents: [lovelace, DocumentKey(collectionName: "scores", documentID: "x")],
                collections: ["teams", "games"]))
        let listing = database.performUpdatesRecordingOriginals(recordingReads: true) { _ = database.collectionNames }
        XCTAssertEqual(listing.reads?.everything, true)
        XCTAssertNil(database.performUpdatesRecordingOriginals { _ = database.document(lovelace) }.reads)
    }

    func testRemovingEverythingAndAddingBackInOneTransactionReportsOnlyRealDifferences() {
        let database = seeded()
        let recorder = ChangesRecorder(database)
        database.performUpdates {
            database.removeAllDocuments()
            database.apply(.added(lovelace, ["name": "Ada Lovelace", "score": 25, "color": "blue"]))
        }
        XCTAssertEqual(recorder.changes.count, 1)
        XCTAssertEqual(recorder.changes.first?.affectedDocumentKeys, [gauss], "lovelace came back unchanged: no entry")
    }

    func testQueriesFilterSortAndLimit() {
        let database = seeded()
        database.apply(.added(shannon, ["name": "Claude Shannon", "score": 40]))
        let players = database.collection("players")
        XCTAssertEqual(players.find(Query(sort: [.descending("score")])).map(\.id), ["shannon", "lovelace", "gauss"])
        XCTAssertEqual(
            players.find(Query(filter: { ($0["score"]?.doubleValue ?? 0) > 10 }, sort: [.ascending("score")], limit: 1))
                .map(\.id), ["lovelace"])
        XCTAssertEqual(players.find(.where("name", equals: "Carl Friedrich Gauss")).map(\.id), ["gauss"])
        XCTAssertEqual(players.count, 3)
        XCTAssertEqual(Set(players.documents.map(\.id)), ["lovelace", "gauss", "shannon"])
    }
}
