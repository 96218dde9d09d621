import EJSON
import XCTest

@testable import MeteorDDP

/// The cache's per-document operations (meteor-ios' METDocumentCacheTests): collections are separate, `replaced`
/// creates, overwrites or removes, and every operation reports the versions before and after.
final class DocumentCacheTests: XCTestCase {
    private let lovelace = DocumentKey(collectionName: "players", documentID: "lovelace")
    private let gauss = DocumentKey(collectionName: "players", documentID: "gauss")
    private let milk = DocumentKey(collectionName: "todos", documentID: "milk")

    private func seeded() -> Database {
        let database = Database()
        database.apply([.added(lovelace, ["name": "Ada Lovelace", "score": 25]), .added(milk, ["text": "milk"])])
        return database
    }

    func testFetchingAllDocumentsOfACollectionReturnsOnlyThatCollectionsDocuments() {
        let database = seeded()
        database.apply(.added(gauss, ["name": "Carl Friedrich Gauss"]))
        XCTAssertEqual(Set(database.collection("players").documents.map(\.id)), ["lovelace", "gauss"])
        XCTAssertEqual(database.collection("todos").documents.map(\.id), ["milk"])
        XCTAssertEqual(database.collection("nothing").count, 0)
        XCTAssertNil(database.collection("todos").document(id: "lovelace"))
    }

    func testReplacingAMissingDocumentCreatesItAndReportsAnAdd() {
        let database = seeded()
        let recorder = ChangesRecorder(database)
        database.apply(.replaced(gauss, ["name": "Carl Friedrich Gauss"]))
        XCTAssertEqual(database.document(gauss)?["name"], "Carl Friedrich Gauss")
        let details = recorder.changes.first?.changeDetails(for: gauss)
        XCTAssertEqual(details?.changeType, .add)
        XCTAssertNil(details?.fieldsBefore)
    }

    func testReplacingAnExistingDocumentOverwritesEveryFieldAndReportsBeforeAndAfter() {
        let database = seeded()
        let recorder = ChangesRecorder(database)
        database.apply(.replaced(lovelace, ["score": 30]))
        XCTAssertEqual(
            database.document(lovelace).map { EJSONValue.object($0.fields) }, ["score": 30],
            "no field of the old version is kept")
        let details = recorder.changes.first?.changeDetails(for: lovelace)
        XCTAssertEqual(details?.changeType, .update)
        XCTAssertEqual(details?.fieldsBefore.map(EJSONValue.object), ["name": "Ada Lovelace", "score": 25])
        XCTAssertEqual(details?.changedFields, ["score": .set(30), "name": .removed])
    }

    func testReplacingWithNothingRemovesTheDocument() {
        let database = seeded()
        let recorder = ChangesRecorder(database)
        database.apply(.replaced(lovelace, nil))
        XCTAssertNil(database.document(lovelace))
        XCTAssertEqual(recorder.changes.first?.changeDetails(for: lovelace)?.changeType, .remove)
        database.apply(.replaced(gauss, nil))
        XCTAssertEqual(recorder.changes.count, 1, "replacing a missing document with nothing changes nothing")
    }

    func testAChangeReportsTheVersionBeforeAndTheVersionAfter() {
        let database = seeded()
        let recorder = ChangesRecorder(database)
        database.apply(.changed(lovelace, ["score": 30], cleared: ["name"]))
        let details = recorder.changes.first?.changeDetails(for: lovelace)
        XCTAssertEqual(details?.fieldsBefore.map(EJSONValue.object), ["name": "Ada Lovelace", "score": 25])
        XCTAssertEqual(details?.fieldsAfter.map(EJSONValue.object), ["score": 30])
    }
}
