import EJSON
import XCTest

@testable import MeteorDDP

/// The persistent table behind each collection: lookups through growth and shrinkage, and versions that never see
/// each other's writes.
final class DocumentTableTests: XCTestCase {
    private func document(_ i: Int, _ value: Int = 0) -> Document {
        Document(id: "doc\(i)", fields: ["i": .number(Double(i)), "v": .number(Double(value))])
    }

    private func insert(_ document: Document, into table: inout DocumentTable) {
        table.updateValue(forKey: document.id) { $0 = document }
    }

    func testEveryDocumentIsFoundThroughGrowthAndShrinkage() {
        var table = DocumentTable()
        for i in 0..<10_000 { insert(document(i), into: &table) }
        XCTAssertEqual(table.count, 10_000)
        for i in stride(from: 0, to: 10_000, by: 7) { XCTAssertEqual(table["doc\(i)"]?["i"], .number(Double(i))) }
        XCTAssertNil(table["doc10000"])
        XCTAssertEqual(Set(table.ids), Set((0..<10_000).map { "doc\($0)" }))
        for i in 0..<9_990 { table.updateValue(forKey: "doc\(i)") { $0 = nil } }
        XCTAssertEqual(table.count, 10)
        XCTAssertEqual(Set(table.documents.map(\.id)), Set((9_990..<10_000).map { "doc\($0)" }))
        for i in 9_990..<10_000 { XCTAssertNotNil(table["doc\(i)"]) }
    }

    func testAnOlderVersionNeverSeesLaterWrites() {
        var table = DocumentTable()
        for i in 0..<1_000 { insert(document(i), into: &table) }
        let before = table
        for i in 0..<500 { insert(document(i, 1), into: &table) }
        table.updateValue(forKey: "doc999") { $0 = nil }
        insert(document(1_000), into: &table)
        for i in 0..<1_000 { XCTAssertEqual(before["doc\(i)"]?["v"], 0) }
        XCTAssertNil(before["doc1000"])
        XCTAssertEqual(before.count, 1_000)
        XCTAssertEqual(table["doc0"]?["v"], 1)
        XCTAssertEqual(table["doc700"]?["v"], 0)
        XCTAssertNil(table["doc999"])
        XCTAssertEqual(table.count, 1_000)
    }

    func testLeavingTheSlotAloneChangesNothing() {
        var table = DocumentTable()
        insert(document(1), into: &table)
        let found: Bool = table.updateValue(forKey: "doc1") { $0 != nil }
        let missing: Bool = table.updateValue(forKey: "doc2") { $0 != nil }
        XCTAssertTrue(found)
        XCTAssertFalse(missing)
        XCTAssertEqual(table.count, 1)
        XCTAssertNil(table["doc2"])
    }
}
