import EJSON
import XCTest

@testable import MeteorDDP

final class DatabaseChangesTests: XCTestCase {
    private let key = DocumentKey(collectionName: "players", documentID: "lovelace")

    func testAddingADocumentIsAnAddWithAllFields() {
        var changes = DatabaseChanges()
        changes.record(key, before: nil, after: ["name": "Ada Lovelace", "score": 25])
        let details = changes.changeDetails(for: key)
        XCTAssertEqual(details?.changeType, .add)
        XCTAssertEqual(details?.changedFields, ["name": .set("Ada Lovelace"), "score": .set(25)])
    }

    func testUpdatingADocumentReportsChangedAndRemovedFields() {
        var changes = DatabaseChanges()
        changes.record(
            key, before: ["name": "Ada Lovelace", "score": 25, "color": "blue"],
            after: ["name": "Ada Lovelace", "score": 30])
        let details = changes.changeDetails(for: key)
        XCTAssertEqual(details?.changeType, .update)
        XCTAssertEqual(details?.changedFields, ["score": .set(30), "color": .removed])
    }

    func testRemovingADocumentMarksEveryFieldRemoved() {
        var changes = DatabaseChanges()
        changes.record(key, before: ["name": "Ada Lovelace", "score": 25], after: nil)
        XCTAssertEqual(changes.changeDetails(for: key)?.changeType, .remove)
        XCTAssertEqual(changes.changeDetails(for: key)?.changedFields, ["name": .removed, "score": .removed])
    }

    func testSameFieldsBeforeAndAfterGiveNoEntry() {
        var changes = DatabaseChanges()
        changes.record(key, before: ["score": 25], after: ["score": 25])
        changes.record(DocumentKey(collectionName: "players", documentID: "gauss"), before: nil, after: nil)
        XCTAssertTrue(changes.isEmpty)
    }

    func testMergingAnAddAndAnUpdateIsAnAddWithTheFinalFields() {
        var first = DatabaseChanges()
        first.record(key, before: nil, after: ["score": 25])
        var second = DatabaseChanges()
        second.record(key, before: ["score": 25], after: ["score": 30, "color": "red"])
        first.merge(second)
        XCTAssertEqual(first.changeDetails(for: key)?.changeType, .add)
        XCTAssertEqual(first.changeDetails(for: key)?.fieldsAfter.map(EJSONValue.object), ["score": 30, "color": "red"])
    }

    func testMergingAnAddAndARemoveIsNothing() {
        var first = DatabaseChanges()
        first.record(key, before: nil, after: ["score": 25])
        var second = DatabaseChanges()
        second.record(key, before: ["score": 25], after: nil)
        XCTAssertTrue(first.merging(second).isEmpty)
    }

    func testMergingAChangeBackToTheOriginalIsNothing() {
        var first = DatabaseChanges()
        first.record(key, before: ["score": 25], after: ["score": 26])
        var second = DatabaseChanges()
        second.record(key, before: ["score": 26], after: ["score": 25])
        XCTAssertTrue(first.merging(second).isEmpty)
    }

    func testLargeChangeSetsAreLookedUpAndMergedByKeyInFirstChangeOrder() {
        // More documents than the linear lookup handles: the by-key index is built on first use.
        let keys = (0..<50).map { DocumentKey(collectionName: "players", documentID: "p\($0)") }
        var first = DatabaseChanges()
        for (i, key) in keys.enumerated() { first.record(key, before: nil, after: ["score": .number(Double(i))]) }
        XCTAssertEqual(first.count, 50)
        XCTAssertEqual(first.changeDetails(for: keys[37])?.fieldsAfter, ["score": 37])
        XCTAssertNil(first.changeDetails(for: DocumentKey(collectionName: "players", documentID: "nobody")))
        var second = DatabaseChanges()
        second.record(keys[3], before: ["score": 3], after: nil)
        second.record(keys[40], before: ["score": 40], after: ["score": 41])
        let extra = DocumentKey(collectionName: "players", documentID: "late")
        second.record(extra, before: nil, after: ["score": 1])
        let merged = first.merging(second)
        XCTAssertEqual(merged.count, 50, "p3 came and went; late is new")
        XCTAssertNil(merged.changeDetails(for: keys[3]))
        XCTAssertEqual(merged.changeDetails(for: keys[40])?.changeType, .add)
        XCTAssertEqual(merged.changeDetails(for: keys[40])?.fieldsAfter, ["score": 41])
        XCTAssertEqual(merged.affectedDocumentKeys.first, keys[0])
        XCTAssertEqual(merged.affectedDocumentKeys.last, extra)
        XCTAssertEqual(first.count, 50, "merging leaves the original as it was")
        XCTAssertEqual(first.changeDetails(for: keys[3])?.changeType, .add)
    }
}
