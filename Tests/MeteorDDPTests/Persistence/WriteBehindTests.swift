import EJSON
import XCTest

@testable import MeteorDDP

/// The write-behind: coalesced batches with each document's newest version, and a bounded backlog while the disk
/// is stuck.
final class WriteBehindTests: XCTestCase {
    private func key(_ n: Int) -> DocumentKey { DocumentKey(collectionName: "items", documentID: "item\(n)") }

    func testEachDocumentIsWrittenAtItsNewestVersionAndRemovalsAreWritten() {
        let store = ScriptedClientStore(gated: true)
        let writer = WriteBehind(store: store)
        let database = Database()
        database.observeCommits { writer.committed($0) }
        database.apply(.added(key(1), ["v": 1]))
        database.apply(.added(key(2), ["v": 1]))
        database.apply(.changed(key(1), ["v": 2], cleared: []))
        database.apply(.removed(key(2)))
        database.apply(.added(key(3), ["v": 1]))
        store.gate!.open()
        writer.waitUntilWritten()
        XCTAssertEqual(store.stored.documents.sorted { $0.key.documentID < $1.key.documentID }, [
            StoredDocument(key: key(1), fields: ["v": 2]),
            StoredDocument(key: key(3), fields: ["v": 1]),
        ])
    }

    func testTheBacklogOfAStuckDiskStaysBoundedAndEndsWithTheNewestVersions() {
        let store = ScriptedClientStore(gated: true)
        let writer = WriteBehind(store: store)
        let database = Database()
        database.observeCommits { writer.committed($0) }
        var peak = 0
        for n in 0..<(WriteBehind.foldThreshold + 50_000) {
            database.apply(.added(key(n % 10), ["v": .number(Double(n))]))
            peak = max(peak, writer.pendingChangeCount)
        }
        XCTAssertLessThanOrEqual(peak, WriteBehind.foldThreshold + 1, "folded instead of growing with every transaction")
        store.gate!.open()
        writer.waitUntilWritten()
        let last = WriteBehind.foldThreshold + 50_000 - 1
        let stored = Dictionary(uniqueKeysWithValues: store.stored.documents.map { ($0.key, $0.fields["v"]) })
        XCTAssertEqual(stored.count, 10)
        for offset in 0..<10 {
            let n = last - offset
            XCTAssertEqual(stored[key(n % 10)], .number(Double(n)))
        }
    }
}
