import EJSON
import Foundation
import XCTest

@testable import MeteorDDP

/// Interleavings and stored states a review of the offline store found wrong (each test failed before its fix).
final class OfflineEdgeCaseTests: XCTestCase {
    private let todo = DocumentKey(collectionName: "todos", documentID: "t1")

    private func methods(_ harness: ClientHarness) -> [(id: String, name: String)] {
        harness.sent.compactMap { if case .method(let id, let name, _, _) = $0 { (id, name) } else { nil } }
    }

    /// A store whose call 1 inserted todo t1 ("milk") with its stub; the server had not seen it.
    private func storeWithOneInsert(noRetry: Bool = false) -> ScriptedClientStore {
        ScriptedClientStore(
            StoredState(
                documents: [StoredDocument(key: todo, fields: ["title": "milk"])],
                serverDocuments: [StoredServerDocument(key: todo, fields: nil, writtenByMethods: ["1"])],
                methods: [
                    StoredMethod(
                        id: "1", name: "addTodo", params: ["milk"], randomSeed: "s", wait: false, noRetry: noRetry,
                        stubWrote: [todo])
                ]
            ))
    }

    // MARK: - The write-behind

    func testWhatIsEnqueuedAfterAClearSurvivesItWhateverWasQueuedBefore() {
        let store = ScriptedClientStore(gated: true)
        let writer = WriteBehind(store: store)
        let before = StoredMethod(id: "1", name: "before", params: [], randomSeed: nil, wait: false, noRetry: false)
        let after = StoredMethod(id: "2", name: "after", params: [], randomSeed: nil, wait: false, noRetry: false)
        // A first write is stuck on the disk; meanwhile a write is queued, then the clear, then a later call.
        writer.subscriptionsChanged([StoredSubscription(name: "stuck", params: [])])
        writer.methodAdded(before) {}
        writer.clear(keepingDocuments: false, keepingCalls: [])
        writer.methodAdded(after) {}
        store.gate!.open()
        writer.waitUntilWritten()
        XCTAssertEqual(store.stored.methods.map(\.name), ["after"], "cleared what came before, kept what came after")
    }

    // MARK: - Restoring

    func testAServerCopyAlsoClaimedByACallThatWasNeverStoredIsReleasedByTheRestoredOne() {
        var buffer = ServerDocumentBuffer()
        buffer.restore(
            [(todo, ServerDocumentBuffer.Version(fields: ["title": "server"], writtenByMethods: ["1", "9"]))],
            stubWrites: [(methodID: "1", wrote: [todo])])
        let (replacements, _) = buffer.methodUpdated("1", isSent: { _ in true })
        XCTAssertEqual(
            replacements, [ServerDocumentBuffer.Replacement(key: todo, fields: ["title": "server"])],
            "call 9 (memory-only, or cleared by a logout) will never have an updated")
    }

    func testAServerCopyNamingARestoredCallThatDoesNotListItIsReleasedByTheCallThatDoes() {
        // A store written by an older version (or damaged): call 2 is restored, but its list of written documents does
        // not name the document, so its `updated` would never release it.
        var buffer = ServerDocumentBuffer()
        buffer.restore(
            [(todo, ServerDocumentBuffer.Version(fields: ["title": "server"], writtenByMethods: ["1", "2"]))],
            stubWrites: [(methodID: "1", wrote: [todo]), (methodID: "2", wrote: [])])
        let (replacements, _) = buffer.methodUpdated("1", isSent: { _ in true })
        XCTAssertEqual(replacements, [ServerDocumentBuffer.Replacement(key: todo, fields: ["title": "server"])])
        XCTAssertFalse(buffer.contains(todo))
    }

    func testFlushWaitersCountTheDocumentsOfSentCallsOnly() {
        var buffer = ServerDocumentBuffer()
        let other = DocumentKey(collectionName: todo.collectionName, documentID: "other")
        buffer.stubWrote(methodID: "1", originals: [(todo, nil)])
        buffer.stubWrote(methodID: "2", originals: [(other, nil)])
        buffer.stubWrote(
            methodID: "3", originals: [(DocumentKey(collectionName: todo.collectionName, documentID: "third"), nil)])
        let ran = Locked(0)
        let waiters = FlushWaiters()
        // Calls 1 and 2 are sent (fewer than the three documents: the sent calls' lists are read); 3 is queued.
        XCTAssertTrue(waiters.register(&buffer, sent: ["1", "2"], generation: 1) { ran.mutate { $0 += 1 } })
        // Every call sent (as many as the documents: every document is looked at).
        XCTAssertTrue(
            waiters.register(&buffer, sent: ["1", "2", "3"], generation: 2) { ran.mutate { $0 += 10 } })
        XCTAssertFalse(
            waiters.register(&buffer, sent: ["4"], generation: 3) { ran.mutate { $0 += 100 } },
            "no document of a sent call")
        waiters.methodUpdated(&buffer, "1")
        XCTAssertEqual(ran.value, 0)
        waiters.methodUpdated(&buffer, "2")
        XCTAssertEqual(ran.value, 1, "the first waiter counted documents 1 and 2 only")
        waiters.methodUpdated(&buffer, "3")
        XCTAssertEqual(ran.value, 11)
    }

    func testServerCopiesNoRestoredCallClaimsAreForgottenByTheStoreToo() {
        let store = ScriptedClientStore(
            StoredState(serverDocuments: [StoredServerDocument(key: todo, fields: nil, writtenByMethods: ["7"])]))
        let harness = ClientHarness { $0.persistence = .store(store) }
        harness.client.waitUntilPersisted()
        XCTAssertEqual(store.stored.serverDocuments, [])
    }

    func testARestoredNoRetryCallIsNotSentAgainAndFailsAtReconciliation() {
        let store = storeWithOneInsert(noRetry: true)
        let harness = ClientHarness { $0.persistence = .store(store) }
        harness.establishConnection()
        harness.flushData()
        XCTAssertEqual(methods(harness).map(\.name), [], "it may have run before the restart")
        XCTAssertEqual(harness.restoredOutcomeSummaries, ["failed invocationFailed"])
        XCTAssertNil(harness.client.database.document(todo), "its stub's effect is undone")
    }

    func testACustomLoginMethodIsNeverStored() async throws {
        let store = ScriptedClientStore()
        let harness = ClientHarness { $0.persistence = .store(store) }
        harness.establishConnection()
        let login = Task { try await harness.client.login(method: "ssoLogin", params: ["ticket": "secret"]) }
        await harness.transport.waitUntilSent(count: 1) { if case .method = $0 { true } else { false } }
        harness.client.waitUntilPersisted()
        XCTAssertEqual(store.stored.methods, [], "its parameters are credentials")
        login.cancel()
    }

    func testARestoredCallRejectedWhileALaterCallStillHoldsItsDocumentIsReportedAsFailed() throws {
        let store = storeWithOneInsert()
        let harness = ClientHarness {
            $0.persistence = .store(store)
            $0.persistence?.reconciliationDelay = .zero
        }
        harness.client.defineStub("touch") { context in
            try context.collection("todos").update("t1", ["$set": ["done": true]])
            return nil
        }
        // A wait call: it goes out only after call 1 is done, so call 1 completes while t1 still shows its stub.
        _ = try harness.client.call("touch", options: MethodOptions(wait: true)) { _ in }
        harness.establishConnection()
        harness.flushData()
        let denied = MeteorError(error: .number(403), reason: "Access denied")
        harness.receive(.result(id: "1", result: nil, error: denied))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.flushData()
        XCTAssertEqual(
            harness.restoredOutcomeSummaries, ["failed 403"],
            "the server never had the todo: the cache shows call 2's stub, not the server")
    }

    func testDuplicateAndHugeStoredIdsNeitherCrashNorBlockLaterCalls() async throws {
        let store = ScriptedClientStore(
            StoredState(methods: [
                StoredMethod(
                    id: "9223372036854775807", name: "a", params: [], randomSeed: nil, wait: false, noRetry: false),
                StoredMethod(id: "3", name: "b", params: [], randomSeed: nil, wait: false, noRetry: false),
                StoredMethod(id: "3", name: "b", params: [], randomSeed: nil, wait: false, noRetry: false)
            ]))
        let harness = ClientHarness { $0.persistence = .store(store) }
        harness.establishConnection()
        XCTAssertEqual(methods(harness).map(\.name), ["a", "b"])
        harness.receive(.result(id: "9223372036854775807", result: nil, error: nil))
        harness.receive(.updated(methodIDs: ["9223372036854775807"]))
        harness.receive(.result(id: "3", result: nil, error: nil))
        harness.receive(.updated(methodIDs: ["3"]))
        harness.flushData()
        XCTAssertTrue(harness.client.restoredCalls.isComplete)
        _ = try harness.client.call("later") { _ in }
        await harness.transport.waitUntilSent(count: 3) { if case .method = $0 { true } else { false } }
    }

    // MARK: - Damaged files

    func testAFileDamagedPastItsHeaderIsMovedAsideWhenReadAndANewOneWorks() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "damaged-\(UUID().uuidString)/cache.sqlite")
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        do {
            let store = try SQLiteStore(fileURL: file)
            var batch = StoreBatch()
            batch.documents = (0..<2_000).map { n in
                (
                    DocumentKey(collectionName: "items", documentID: "item\(n)"),
                    Document(id: "item\(n)", fields: ["text": .string(String(repeating: "x", count: 200))])
                )
            }
            try store.write(batch)
        }
        // Checkpoint the WAL into the file, then overwrite its pages past the first ones (the header stays valid).
        try runSQLite3(on: file, "PRAGMA wal_checkpoint(TRUNCATE)")
        let handle = try FileHandle(forWritingTo: file)
        try handle.seek(toOffset: 4096 * 3)
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 4096 * 40))
        try handle.close()

        var configuration = DDPClient.Configuration()
        configuration.persistence = .sqlite(at: file)
        let client = DDPClient(transport: InMemoryTransport(), configuration: configuration)
        XCTAssertEqual(client.restoreReport.problem?.kind, .corruptFile)
        XCTAssertNotNil(client.restoreReport.problem?.movedTo)
        client.database.apply(.added(DocumentKey(collectionName: "items", documentID: "new"), ["n": 1]))
        client.waitUntilPersisted()
        XCTAssertEqual(try SQLiteStore(fileURL: file).load().documents.map(\.key.documentID), ["new"])
    }
}
