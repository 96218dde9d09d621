import EJSON
import XCTest

@testable import MeteorDDP

/// The table behind each collection: lookups through growth and shrinkage, versions that never see each other's
/// writes, and documents released exactly when no version uses them any more.
final class DocumentTableTests: XCTestCase {
    private func document(_ i: Int, _ value: Int = 0) -> Document {
        Document(id: "doc\(i)", fields: ["i": .number(Double(i)), "v": .number(Double(value))])
    }

    private func write(
        _ document: Document?, id: String, into table: inout DocumentTable, epoch: UInt64, retired: inout RetiredMemory
    ) {
        table.updateValue(forKey: id, epoch: epoch, retiring: &retired) { slot, _ in slot = document }
    }

    func testEveryDocumentIsFoundThroughGrowthAndShrinkage() {
        var table = DocumentTable()
        var retired = RetiredMemory()
        for i in 0..<10_000 { write(document(i), id: "doc\(i)", into: &table, epoch: 1, retired: &retired) }
        XCTAssertEqual(table.count, 10_000)
        for i in stride(from: 0, to: 10_000, by: 7) { XCTAssertEqual(table["doc\(i)"]?["i"], .number(Double(i))) }
        XCTAssertNil(table["doc10000"])
        XCTAssertEqual(Set(table.ids), Set((0..<10_000).map { "doc\($0)" }))
        for i in 0..<9_990 { write(nil, id: "doc\(i)", into: &table, epoch: 2, retired: &retired) }
        XCTAssertEqual(table.count, 10)
        XCTAssertEqual(Set(table.documents.map(\.id)), Set((9_990..<10_000).map { "doc\($0)" }))
        for i in 9_990..<10_000 { XCTAssertNotNil(table["doc\(i)"]) }
        for i in 9_990..<10_000 { write(nil, id: "doc\(i)", into: &table, epoch: 3, retired: &retired) }
        XCTAssertTrue(table.isEmpty)
        XCTAssertNil(table["doc9999"])
        retired.release()
    }

    func testAnOlderVersionNeverSeesLaterWrites() {
        var table = DocumentTable()
        var retired = RetiredMemory()
        for i in 0..<1_000 { write(document(i), id: "doc\(i)", into: &table, epoch: 1, retired: &retired) }
        let before = table
        for i in 0..<500 { write(document(i, 1), id: "doc\(i)", into: &table, epoch: 2, retired: &retired) }
        write(nil, id: "doc999", into: &table, epoch: 2, retired: &retired)
        write(document(1_000), id: "doc1000", into: &table, epoch: 2, retired: &retired)
        for i in 0..<1_000 { XCTAssertEqual(before["doc\(i)"]?["v"], 0) }
        XCTAssertNil(before["doc1000"])
        XCTAssertEqual(before.count, 1_000)
        XCTAssertEqual(table["doc0"]?["v"], 1)
        XCTAssertEqual(table["doc700"]?["v"], 0)
        XCTAssertNil(table["doc999"])
        XCTAssertEqual(table.count, 1_000)
        retired.release()
        table.releaseEverything()
    }

    func testLeavingTheSlotAloneChangesNothing() {
        var table = DocumentTable()
        var retired = RetiredMemory()
        write(document(1), id: "doc1", into: &table, epoch: 1, retired: &retired)
        let found: Bool = table.updateValue(forKey: "doc1", epoch: 2, retiring: &retired) { slot, _ in slot != nil }
        let missing: Bool = table.updateValue(forKey: "doc2", epoch: 2, retiring: &retired) { slot, _ in slot != nil }
        XCTAssertTrue(found)
        XCTAssertFalse(missing)
        XCTAssertTrue(retired.isEmpty, "nothing was written, so nothing was copied or replaced")
        XCTAssertEqual(table.count, 1)
        XCTAssertNil(table["doc2"])
        table.releaseEverything()
    }

    func testAReplacedDocumentLivesUntilItsRetiredListIsReleased() {
        var table = DocumentTable()
        var retired = RetiredMemory()
        weak var first: Document.Storage?
        weak var second: Document.Storage?
        do {
            let original = document(1)
            first = original.storage
            write(original, id: "doc1", into: &table, epoch: 1, retired: &retired)
        }
        XCTAssertNotNil(first, "the table holds the version it stores")
        do {
            let replacement = document(1, 1)
            second = replacement.storage
            write(replacement, id: "doc1", into: &table, epoch: 2, retired: &retired)
        }
        XCTAssertNotNil(first, "an older version may still read the replaced document")
        retired.release()
        XCTAssertNil(first, "released with the retired memory, and not before")
        XCTAssertNotNil(second)
        table.releaseEverything()
        XCTAssertNil(second)
    }

    func testAStoredDocumentKeepsItsChangePositionForItsTransactionOnly() {
        var table = DocumentTable()
        var retired = RetiredMemory()
        table.updateValue(forKey: "doc0", epoch: 1, retiring: &retired) { slot, change in
            XCTAssertEqual(change, -1)
            slot = document(0)
            change = 0
        }
        // Growth in the same transaction moves every entry: the positions go along.
        for i in 1..<1_000 {
            table.updateValue(forKey: "doc\(i)", epoch: 1, retiring: &retired) { slot, change in
                slot = document(i)
                change = Int32(i)
            }
        }
        for i in stride(from: 0, to: 1_000, by: 37) {
            let seen: Int32 = table.updateValue(forKey: "doc\(i)", epoch: 1, retiring: &retired) { _, change in change }
            XCTAssertEqual(seen, Int32(i))
        }
        // A later transaction has listed nothing yet.
        let later: Int32 = table.updateValue(forKey: "doc5", epoch: 2, retiring: &retired) { _, change in change }
        XCTAssertEqual(later, -1)
        table.updateValue(forKey: "doc5", epoch: 2, retiring: &retired) { slot, change in
            slot = document(5, 1)
            change = 0
        }
        let neighbour: Int32 = table.updateValue(forKey: "doc6", epoch: 2, retiring: &retired) { _, change in change }
        XCTAssertEqual(neighbour, -1, "copied entries do not inherit the earlier transaction's positions")
        let again: Int32 = table.updateValue(forKey: "doc5", epoch: 2, retiring: &retired) { _, change in change }
        XCTAssertEqual(again, 0)
        retired.release()
        table.releaseEverything()
    }
    /// A lookup made in an older version spares the hash and the scan only while the very document it found sits
    /// where it was: after a removal moved it, a rebuild, or a replacement, the answer is the fresh lookup's.
    func testALocationFoundInAnOlderVersionGivesTheFreshLookupsAnswer() {
        var table = DocumentTable()
        var retired = RetiredMemory()
        for i in 0..<200 { write(document(i), id: "doc\(i)", into: &table, epoch: 1, retired: &retired) }
        let older = table
        let earlier = (0..<200).map { older.locate("doc\($0)", epoch: 0) }
        // In a later transaction: replace a few, remove a few (the last entry of a bucket moves into the gap), list
        // changes, then grow the table past a rebuild.
        for i in stride(from: 0, to: 200, by: 5) {
            write(document(i, 1), id: "doc\(i)", into: &table, epoch: 2, retired: &retired)
        }
        for i in stride(from: 1, to: 200, by: 9) {
            write(nil, id: "doc\(i)", into: &table, epoch: 2, retired: &retired)
        }
        func assertSameAnswers(_ context: String) {
            for i in 0..<200 {
                let fresh = table.locate("doc\(i)", epoch: 2)
                let hinted = table.locate("doc\(i)", epoch: 2, knownAt: earlier[i])
                XCTAssertEqual(hinted.hash, fresh.hash, "doc\(i) \(context)")
                XCTAssertEqual(hinted.position, fresh.position, "doc\(i) \(context)")
                XCTAssertEqual(hinted.change, fresh.change, "doc\(i) \(context)")
                XCTAssertEqual(hinted.document?.toOpaque(), fresh.document?.toOpaque(), "doc\(i) \(context)")
            }
        }
        assertSameAnswers("after replacements and removals")
        for i in 200..<3_000 { write(document(i), id: "doc\(i)", into: &table, epoch: 2, retired: &retired) }
        assertSameAnswers("after the table grew")
        retired.release()
        table.releaseEverything()
    }
}
