import EJSON
import NIOConcurrencyHelpers
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
        XCTAssertEqual(
            store.stored.documents.sorted { $0.key.documentID < $1.key.documentID },
            [
                StoredDocument(key: key(1), fields: ["v": 2]),
                StoredDocument(key: key(3), fields: ["v": 1])
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
        XCTAssertLessThanOrEqual(
            peak, WriteBehind.foldThreshold + 1, "folded instead of growing with every transaction")
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

    // MARK: - Held documents

    /// Records each batch (and writes it to a ``ScriptedClientStore``).
    private final class RecordingStore: ClientStore, @unchecked Sendable {
        // @unchecked because `batches` is protected by its lock.
        let inner = ScriptedClientStore()
        private let recorded = NIOLockedValueBox<[StoreBatch]>([])
        var batches: [StoreBatch] { recorded.withLockedValue { $0 } }
        func load() throws -> StoredState { try inner.load() }
        func write(_ batch: StoreBatch) throws {
            recorded.withLockedValue { $0.append(batch) }
            try inner.write(batch)
        }
        func clear(keepingDocuments: Bool, keepingCalls: Set<String>) throws {
            try inner.clear(keepingDocuments: keepingDocuments, keepingCalls: keepingCalls)
        }
    }

    private func call(_ id: String, wrote keys: [DocumentKey]) -> StoredMethod {
        StoredMethod(id: id, name: "m", params: [], randomSeed: nil, wait: false, noRetry: false, stubWrote: keys)
    }

    private func storedFields(_ store: ScriptedClientStore) -> [DocumentKey: EJSONObject] {
        Dictionary(uniqueKeysWithValues: store.stored.documents.map { ($0.key, $0.fields) })
    }

    /// A stored call's stub wrote item1; its `updated` removed it from the cache (the server had none yet), the
    /// server's version came later: the disk keeps the stub's version and the claim until the call leaves the store,
    /// and then gets the current ones in the removal's batch; a change after that is written after them.
    func testAHeldDocumentIsWrittenWithTheRemovalOfItsCallAndInOrderWithLaterChanges() {
        let store = RecordingStore()
        let writer = WriteBehind(store: store)
        let database = Database()
        database.observeCommits { writer.committed($0) }
        let claim = StoredServerDocument(key: key(1), fields: nil, writtenByMethods: ["1"])
        database.apply(.added(key(1), ["v": "stub"]))
        writer.serverDocumentsChanged([(key(1), claim)])
        writer.methodAdded(call("1", wrote: [key(1)])) {}
        writer.waitUntilWritten()

        writer.hold([key(1), key(2)])
        XCTAssertEqual(writer.heldKeys, [key(1)], "only documents a stored call's stub wrote are held")
        writer.serverDocumentsChanged([(key(1), nil)])
        database.apply(.removed(key(1)))
        database.apply(.added(key(1), ["v": "server"]))
        database.apply(.added(key(2), ["v": 1]))
        writer.waitUntilWritten()
        XCTAssertEqual(storedFields(store.inner), [key(1): ["v": "stub"], key(2): ["v": 1]])
        XCTAssertEqual(store.inner.stored.serverDocuments, [claim])

        let before = store.batches.count
        writer.methodRemoved("1")
        writer.waitUntilWritten()
        XCTAssertEqual(store.batches.count, before + 1)
        let removal = store.batches.last!
        XCTAssertEqual(removal.methodsRemoved, ["1"])
        XCTAssertEqual(removal.documents.map { $0.key }, [key(1)], "written with the removal")
        XCTAssertEqual(removal.serverDocuments.map { $0.key }, [key(1)])
        XCTAssertEqual(storedFields(store.inner), [key(1): ["v": "server"], key(2): ["v": 1]])
        XCTAssertEqual(store.inner.stored.serverDocuments, [])
        XCTAssertEqual(writer.heldKeys, [])

        // Released in the same pending set as later changes: the later one wins.
        writer.methodAdded(call("2", wrote: [key(3)])) {}
        database.apply(.added(key(3), ["v": "stub"]))
        writer.hold([key(3)])
        database.apply(.changed(key(3), ["v": "server"], cleared: []))
        let gated = ScriptedClientStore.Gate()
        writer.whenWritten { gated.pass() }
        writer.methodRemoved("2")
        database.apply(.changed(key(3), ["v": "newest"], cleared: []))
        gated.open()
        writer.waitUntilWritten()
        XCTAssertEqual(storedFields(store.inner)[key(3)], ["v": "newest"])
    }

    /// A document held for a call stays held while another stored call whose stub wrote it is on disk.
    func testAHeldDocumentWaitsForEveryStoredCallThatWroteIt() {
        let store = ScriptedClientStore()
        let writer = WriteBehind(store: store)
        let database = Database()
        database.observeCommits { writer.committed($0) }
        writer.restored([call("1", wrote: [key(1)])])
        writer.methodAdded(call("2", wrote: [key(1)])) {}
        database.apply(.added(key(1), ["v": "stubs"]))
        writer.hold([key(1)])
        database.apply(.removed(key(1)))
        writer.methodRemoved("2")
        writer.waitUntilWritten()
        XCTAssertEqual(storedFields(store), [key(1): ["v": "stubs"]], "call 1 is still stored")
        writer.methodRemoved("1")
        writer.waitUntilWritten()
        XCTAssertEqual(storedFields(store), [:])
    }

    /// A clear that drops the calls holding a document writes its current state first: kept with the cache, or
    /// erased.
    func testAClearWritesTheHeldDocumentsOfTheCallsItDropsBeforeErasing() {
        for keepingDocuments in [true, false] {
            let store = ScriptedClientStore()
            let writer = WriteBehind(store: store)
            let database = Database()
            database.observeCommits { writer.committed($0) }
            writer.methodAdded(call("1", wrote: [key(1)])) {}
            database.apply(.added(key(1), ["v": "stub"]))
            writer.hold([key(1)])
            database.apply(.changed(key(1), ["v": "server"], cleared: []))
            writer.clear(keepingDocuments: keepingDocuments, keepingCalls: [])
            writer.waitUntilWritten()
            XCTAssertEqual(storedFields(store), keepingDocuments ? [key(1): ["v": "server"]] : [:])
            XCTAssertEqual(store.stored.methods, [])
            XCTAssertEqual(writer.heldKeys, [])
            database.apply(.changed(key(1), ["v": "later"], cleared: []))
            writer.waitUntilWritten()
            XCTAssertEqual(
                storedFields(store), [key(1): ["v": "later"]], "written as any document once no call holds it")
        }
    }
}
