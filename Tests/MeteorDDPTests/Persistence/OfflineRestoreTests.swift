import EJSON
import Foundation
import XCTest

@testable import MeteorDDP

/// A client with a store: the cache and the unanswered calls come back at launch, the first connection reconciles
/// without flicker, restored calls go out with their ids and seeds, and their outcomes are reported. Each "run" is a
/// new client on the same SQLite file (the kill test with real processes is in IntegrationTests).
final class OfflineRestoreTests: XCTestCase {
    private var file: URL!
    private let ada = DocumentKey(collectionName: "players", documentID: "ada")
    private let gauss = DocumentKey(collectionName: "players", documentID: "gauss")

    override func setUpWithError() throws {
        file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "offline-\(UUID().uuidString)/cache.sqlite")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: file.deletingLastPathComponent())
    }

    private func launch(_ configure: (inout DDPClient.Configuration) -> Void = { _ in }) -> ClientHarness {
        let harness = ClientHarness { configuration in
            configuration.persistence = .sqlite(at: file)
            configure(&configuration)
        }
        harness.client.defineStub("addTodo") { context in
            _ = try context.collection("todos").insert(["title": context.params[0] ?? nil])
            return nil
        }
        return harness
    }

    private func todo(_ harness: ClientHarness, _ id: String) -> Document? {
        harness.client.database.document(DocumentKey(collectionName: "todos", documentID: id))
    }

    private func methods(_ harness: ClientHarness) -> [(id: String, name: String, seed: String?)] {
        harness.sent.compactMap {
            if case .method(let id, let name, _, let seed) = $0 { (id, name, seed) } else { nil }
        }
    }

    /// Run 1: connected, "players" ready with Ada and Gauss, everything on disk.
    private func firstRunWithPlayers() {
        let harness = launch()
        harness.establishConnection()
        let players = harness.client.subscribe("players")
        harness.settle()
        harness.receive(.added(collection: "players", id: "ada", fields: ["name": "Ada", "score": 25]))
        harness.receive(.added(collection: "players", id: "gauss", fields: ["name": "Gauss"]))
        harness.receive(.ready(subscriptionIDs: [players.id]))
        harness.flushData()
        harness.client.waitUntilPersisted()
        withExtendedLifetime(players) {}
    }

    /// Run 1, never connected: one `addTodo("milk")` call. Returns the id its stub gave the todo and the seed.
    private func firstRunOfflineCall() throws -> (todoID: String, seed: String) {
        let harness = launch()
        _ = try harness.client.call("addTodo", params: ["milk"]) { _ in }
        harness.flushData()
        harness.client.waitUntilPersisted()
        let todo = try XCTUnwrap(harness.client.database.collection("todos").documents.first)
        let stored = try SQLiteStore(fileURL: file).load()
        return (todo.id, try XCTUnwrap(stored.methods.first?.randomSeed))
    }

    // MARK: - Restore

    func testTheCacheIsBackBeforeConnecting() throws {
        firstRunWithPlayers()
        let harness = launch()
        XCTAssertEqual(harness.transport.connectionAttempts, 0)
        XCTAssertEqual(harness.client.database.document(ada)?.fields, ["name": "Ada", "score": 25])
        XCTAssertEqual(harness.client.database.collection("players").count, 2)
        XCTAssertEqual(harness.client.restoreReport.documents, 2)
        XCTAssertEqual(harness.client.restoreReport.subscriptions, 1)
        XCTAssertNil(harness.client.restoreReport.problem)
    }

    // MARK: - Reconciliation

    func testAnUnchangedServerChangesNoDocumentOnlyTheFromCacheFlag() throws {
        firstRunWithPlayers()
        let harness = launch()
        let recorder = ChangesRecorder(harness.client.database)
        let players = harness.client.subscribe("players")
        harness.establishConnection()
        harness.receive(.added(collection: "players", id: "gauss", fields: ["name": "Gauss"]))
        harness.receive(.added(collection: "players", id: "ada", fields: ["name": "Ada", "score": 25]))
        harness.receive(.ready(subscriptionIDs: [players.id]))
        harness.flushData()
        XCTAssertEqual(
            recorder.documentChanges.count, 0, "a relaunch with unchanged server data changes no document")
        XCTAssertEqual(
            recorder.changes.map(\.metadataChange.fromCacheChanged), [true],
            "one notification: no longer from the store")
        XCTAssertEqual(harness.client.database.collection("players").count, 2)
        XCTAssertEqual(players.status, .ready)
    }

    func testWhatTheServerNoLongerHasGoesAwayInOneTransactionAtReady() throws {
        firstRunWithPlayers()
        let harness = launch()
        let recorder = ChangesRecorder(harness.client.database)
        let players = harness.client.subscribe("players")
        harness.establishConnection()
        harness.receive(.added(collection: "players", id: "ada", fields: ["name": "Ada", "score": 30]))
        harness.flushData()
        XCTAssertNotNil(harness.client.database.document(gauss), "held until the subscription is ready: no flicker")
        XCTAssertEqual(recorder.changes.count, 0)
        harness.receive(.ready(subscriptionIDs: [players.id]))
        harness.flushData()
        XCTAssertEqual(recorder.changes.count, 1, "one transaction")
        XCTAssertEqual(Set(recorder.changes.first?.affectedDocumentKeys ?? []), [ada, gauss])
        XCTAssertEqual(harness.client.database.document(ada)?.fields, ["name": "Ada", "score": 30])
        XCTAssertNil(harness.client.database.document(gauss))
    }

    func testARestoredSubscriptionTheAppDoesNotMakeAgainIsAwaitedForTheDelayThenItsDocumentsGo() throws {
        firstRunWithPlayers()
        let harness = launch { $0.persistence?.reconciliationDelay = .seconds(2) }
        harness.establishConnection()
        harness.flushData()
        harness.advance(by: .milliseconds(1_990))
        harness.flushData()
        XCTAssertEqual(harness.client.database.collection("players").count, 2, "still waiting for the app to subscribe")
        harness.advance(by: .milliseconds(20))
        harness.flushData()
        XCTAssertEqual(harness.client.database.collection("players").count, 0, "covered by no subscription: gone")
    }

    func testARestoredSubscriptionMadeAgainAfterConnectingIsWaitedForBeyondTheDelay() throws {
        firstRunWithPlayers()
        let harness = launch { $0.persistence?.reconciliationDelay = .seconds(2) }
        let recorder = ChangesRecorder(harness.client.database)
        harness.establishConnection()
        harness.advance(by: .seconds(1))
        let players = harness.client.subscribe("players")
        harness.settle()
        harness.advance(by: .seconds(5))
        harness.flushData()
        XCTAssertEqual(
            harness.client.database.collection("players").count, 2, "made again in time: its readiness is awaited")
        harness.receive(.added(collection: "players", id: "ada", fields: ["name": "Ada", "score": 25]))
        harness.receive(.added(collection: "players", id: "gauss", fields: ["name": "Gauss"]))
        harness.receive(.ready(subscriptionIDs: [players.id]))
        harness.flushData()
        XCTAssertEqual(recorder.documentChanges.count, 0)
    }

    func testAConnectionLostBeforeReconciliationStillReconcilesOnTheNextOne() throws {
        firstRunWithPlayers()
        let harness = launch()
        let recorder = ChangesRecorder(harness.client.database)
        let players = harness.client.subscribe("players")
        harness.establishConnection()
        harness.dropAndReopen()
        harness.receive(.connected(session: "S2"))
        harness.flushData()
        XCTAssertEqual(harness.client.database.collection("players").count, 2, "not wiped by the second connection")
        harness.receive(.added(collection: "players", id: "ada", fields: ["name": "Ada", "score": 25]))
        harness.receive(.added(collection: "players", id: "gauss", fields: ["name": "Gauss"]))
        harness.receive(.ready(subscriptionIDs: [players.id]))
        harness.flushData()
        XCTAssertEqual(recorder.documentChanges.count, 0)
    }

    // MARK: - Durable calls

    func testAnOfflineCallIsRestoredWithItsStubEffectAndSentWithTheSameIDAndSeed() async throws {
        let (todoID, seed) = try firstRunOfflineCall()
        let harness = launch()
        XCTAssertEqual(todo(harness, todoID)?.fields["title"], "milk", "the stub's effect, before connecting")
        XCTAssertEqual(harness.client.restoredCalls.calls.map(\.id), ["1"])
        let todos = harness.client.subscribe("todos")
        harness.establishConnection()
        XCTAssertEqual(methods(harness).map(\.id), ["1"])
        XCTAssertEqual(methods(harness).first?.seed, seed, "the server makes the same id")
        _ = try harness.client.call("other") { _ in }
        await harness.transport.waitUntilSent(count: 2) { if case .method = $0 { true } else { false } }
        XCTAssertEqual(methods(harness).map(\.id), ["1", "2"], "new ids follow the restored ones")

        harness.receive(.added(collection: "todos", id: todoID, fields: ["title": "milk"]))
        harness.receive(.ready(subscriptionIDs: [todos.id]))
        harness.receive(.result(id: "1", result: nil, error: nil))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.flushData()
        XCTAssertEqual(harness.client.restoredCalls.outcomes.map(\.result), [.succeeded(nil)])
        XCTAssertEqual(todo(harness, todoID)?.fields["title"], "milk")
        harness.client.waitUntilPersisted()
        XCTAssertEqual(
            try SQLiteStore(fileURL: file).load().methods.map(\.id), ["2"], "the completed call left the store")
    }

    func testARestoredCallTheServerRejectsIsRolledBackAndReported() throws {
        let (todoID, _) = try firstRunOfflineCall()
        let harness = launch()
        let todos = harness.client.subscribe("todos")
        harness.establishConnection()
        harness.receive(.ready(subscriptionIDs: [todos.id]))
        harness.flushData()
        XCTAssertNotNil(todo(harness, todoID), "the stub's effect stays until the call's updated")
        let denied = MeteorError(error: .number(403), reason: "Access denied")
        harness.receive(.result(id: "1", result: nil, error: denied))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.flushData()
        XCTAssertNil(todo(harness, todoID), "the server's view wins")
        XCTAssertEqual(harness.restoredOutcomeSummaries, ["failed 403"])
    }

    func testARestoredInsertThatHadAlreadyRunIsReportedAsAlreadyApplied() throws {
        let (todoID, _) = try firstRunOfflineCall()
        let harness = launch()
        let todos = harness.client.subscribe("todos")
        harness.establishConnection()
        // The call ran before the app was killed: the server has the todo, and running it again fails.
        harness.receive(.added(collection: "todos", id: todoID, fields: ["title": "milk", "createdAt": 5]))
        harness.receive(.ready(subscriptionIDs: [todos.id]))
        let duplicate = MeteorError(error: .number(409), reason: "Duplicate key")
        harness.receive(.result(id: "1", result: nil, error: duplicate))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.flushData()
        XCTAssertEqual(harness.restoredOutcomeSummaries, ["alreadyApplied 409"])
        XCTAssertEqual(todo(harness, todoID)?.fields, ["title": "milk", "createdAt": 5])
    }

    func testACallAnsweredBeforeTheCrashIsNotSentAgainAndCompletesAtReconciliation() throws {
        let store = ScriptedClientStore(
            StoredState(
                methods: [
                    StoredMethod(
                        id: "4", name: "addTodo", params: ["milk"], randomSeed: "s", wait: false, noRetry: false,
                        result: .value("done"))
                ]
            ))
        let harness = ClientHarness { $0.persistence = .store(store) }
        harness.establishConnection()
        harness.flushData()
        XCTAssertEqual(methods(harness).map(\.id), [], "the server already ran it")
        XCTAssertEqual(harness.client.restoredCalls.outcomes.map(\.result), [.succeeded("done")])
        XCTAssertTrue(harness.client.restoredCalls.isComplete)
    }

    func testRestoredCallsGoBehindTheResumeLogin() async throws {
        let store = ScriptedClientStore(
            StoredState(
                methods: [
                    StoredMethod(
                        id: "1", name: "addTodo", params: ["milk"], randomSeed: "s", wait: false, noRetry: false)
                ]
            ))
        let harness = ClientHarness {
            $0.persistence = .store(store)
            $0.accountStore = InMemoryAccountStore(Account(userID: "ada", token: "tok"))
        }
        harness.establishConnection()
        XCTAssertEqual(methods(harness).map(\.name), ["login"])
        XCTAssertEqual(methods(harness).first?.id, "2")
        harness.receive(.result(id: "2", result: ["id": "ada", "token": "tok2"], error: nil))
        harness.receive(.updated(methodIDs: ["2"]))
        await harness.transport.waitUntilSent(count: 2) { if case .method = $0 { true } else { false } }
        XCTAssertEqual(methods(harness).map(\.name), ["login", "addTodo"])
        XCTAssertEqual(store.stored.methods.map(\.name), ["addTodo"], "the login itself is never stored")
    }

    func testACallGoesOutOnlyOnceItIsOnDiskAndItsStubEffectIsVisibleAtOnce() async throws {
        let store = ScriptedClientStore(gated: true)
        let harness = ClientHarness { $0.persistence = .store(store) }
        harness.client.defineStub("addTodo") { context in
            _ = try context.collection("todos").insert(["title": context.params[0] ?? nil])
            return nil
        }
        harness.establishConnection()
        _ = try harness.client.call("addTodo", params: ["milk"]) { _ in }
        harness.settle()
        XCTAssertEqual(
            harness.client.database.collection("todos").count, 1, "the stub's effect does not wait for the disk")
        XCTAssertEqual(methods(harness).count, 0, "not sent before it is durable")
        store.gate!.open()
        await harness.transport.waitUntilSent(count: 1) { if case .method = $0 { true } else { false } }
        XCTAssertEqual(store.stored.methods.map(\.name), ["addTodo"])
        XCTAssertEqual(
            store.stored.documents.map(\.key.collectionName), ["todos"],
            "its stub's effect is on disk no later than the call")
    }

    func testMemoryOnlyMethodsAreNeverStored() throws {
        let store = ScriptedClientStore()
        let harness = ClientHarness { $0.persistence = .store(store) }
        harness.establishConnection()
        _ = try harness.client.call("login", params: [["password": "secret"]]) { _ in }
        harness.settle()
        XCTAssertEqual(methods(harness).map(\.name), ["login"], "sent at once")
        harness.client.waitUntilPersisted()
        XCTAssertEqual(store.stored.methods, [])
    }

    // MARK: - Failures

    func testAStoreThatFailsWritesIsReportedAndTheClientGoesOnInMemory() async throws {
        let store = ScriptedClientStore()
        store.failWrites("disk full")
        let harness = ClientHarness { $0.persistence = .store(store) }
        let errors = harness.client.errors
        harness.establishConnection()
        _ = try harness.client.call("m") { _ in }
        await harness.transport.waitUntilSent(count: 1) { if case .method = $0 { true } else { false } }
        var iterator = errors.makeAsyncIterator()
        let error = await iterator.next()
        XCTAssertEqual(error?.code, .persistenceFailed)
        XCTAssertEqual(error?.persistenceError?.kind, .writeFailed)
        _ = try harness.client.call("n") { _ in }
        await harness.transport.waitUntilSent(count: 2) { if case .method = $0 { true } else { false } }
    }

    func testACorruptFileStartsEmptyAndIsReported() throws {
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(repeating: 7, count: 4096).write(to: file)
        let harness = launch()
        XCTAssertEqual(harness.client.restoreReport.problem?.kind, .corruptFile)
        XCTAssertEqual(harness.client.database.collection("players").count, 0)
        harness.establishConnection()
        let players = harness.client.subscribe("players")
        harness.settle()
        harness.receive(.added(collection: "players", id: "ada", fields: ["name": "Ada"]))
        harness.receive(.ready(subscriptionIDs: [players.id]))
        harness.flushData()
        harness.client.waitUntilPersisted()
        XCTAssertEqual(try SQLiteStore(fileURL: file).load().documents.count, 1, "the new store works")
    }

    func testAFileOfANewerSchemaIsMovedAsideAndTheClientStartsEmptyWithANewStore() throws {
        firstRunWithPlayers()
        // A later version of the library added a migration this one does not know.
        try runSQLite3(on: file, "INSERT INTO grdb_migrations (identifier) VALUES ('v9-from-the-future')")
        let harness = launch()
        XCTAssertEqual(harness.client.restoreReport.problem?.kind, .newerSchema)
        let movedTo = try XCTUnwrap(harness.client.restoreReport.problem?.movedTo)
        XCTAssertTrue(FileManager.default.fileExists(atPath: movedTo), "kept aside for a newer version to read")
        XCTAssertEqual(harness.client.database.collection("players").count, 0)
        _ = try harness.client.call("addTodo", params: ["milk"]) { _ in }
        harness.client.waitUntilPersisted()
        XCTAssertEqual(try SQLiteStore(fileURL: file).load().methods.map(\.name), ["addTodo"], "the new store works")
    }

    func testAStoreThatCannotBeOpenedIsReportedAndTheClientWorksInMemory() async throws {
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        let blocker = file.deletingLastPathComponent().appendingPathComponent("not-a-directory")
        try Data("x".utf8).write(to: blocker)
        let harness = ClientHarness { $0.persistence = .sqlite(at: blocker.appendingPathComponent("cache.sqlite")) }
        XCTAssertEqual(harness.client.restoreReport.problem?.kind, .cannotOpen)
        harness.client.defineStub("addTodo") { context in
            _ = try context.collection("todos").insert(["title": context.params[0] ?? nil])
            return nil
        }
        harness.establishConnection()
        _ = try harness.client.call("addTodo", params: ["milk"]) { _ in }
        await harness.transport.waitUntilSent(count: 1) { if case .method = $0 { true } else { false } }
        XCTAssertEqual(methods(harness).map(\.name), ["addTodo"], "sent without waiting for a disk there is not")
        XCTAssertEqual(harness.client.database.collection("todos").count, 1)
    }

    func testARowChangedBehindTheLibrarysBackStartsEmptyWithAReadError() throws {
        firstRunWithPlayers()
        try runSQLite3(on: file, "UPDATE document SET fields = X'0361646107FFFFFFFF' WHERE id = 'ada'")
        let harness = launch()
        XCTAssertEqual(harness.client.restoreReport.problem?.kind, .readFailed)
        XCTAssertEqual(harness.client.database.collection("players").count, 0, "nothing half-restored")
        harness.client.waitUntilPersisted()
        XCTAssertEqual(
            try SQLiteStore(fileURL: file).load(), StoredState(),
            "the unreadable state was cleared, not mixed with new writes")
    }

    /// Run 2 of the logout tests: "players" made again and ready (so its documents stay in the cache and on disk), a
    /// call made while the logout is in flight (queued behind it: `logout` is a wait method), then the logout answered.
    /// Returns the harness and the id of that call.
    private func logOutWithPlayersShown(_ configure: (inout DDPClient.Configuration) -> Void = { _ in }) async throws
        -> (ClientHarness, String)
    {
        firstRunWithPlayers()
        let harness = launch(configure)
        let players = harness.client.subscribe("players")
        harness.establishConnection()
        harness.receive(.added(collection: "players", id: "ada", fields: ["name": "Ada", "score": 25]))
        harness.receive(.added(collection: "players", id: "gauss", fields: ["name": "Gauss"]))
        harness.receive(.ready(subscriptionIDs: [players.id]))
        harness.flushData()
        harness.client.waitUntilPersisted()
        let before = try SQLiteStore(fileURL: file).load()
        XCTAssertEqual(
            [before.documents.count, before.subscriptions.count], [2, 1],
            "the store held the cache and the subscription")

        let logout = Task { try await harness.client.logout() }
        await harness.transport.waitUntilSent(count: 1) { if case .method = $0 { true } else { false } }
        let logoutID = try XCTUnwrap(methods(harness).first?.id)
        _ = try harness.client.call("addTodo", params: ["bread"]) { _ in }
        harness.settle()
        harness.client.waitUntilPersisted()
        harness.receive(.result(id: logoutID, result: nil, error: nil))
        harness.receive(.updated(methodIDs: [logoutID]))
        harness.flushData()
        try await logout.value
        await harness.transport.waitUntilSent(count: 2) { if case .method = $0 { true } else { false } }
        harness.client.waitUntilPersisted()
        withExtendedLifetime(players) {}
        return (harness, try XCTUnwrap(methods(harness).last?.id))
    }

    func testLoggingOutClearsTheStoredCacheAndSubscriptionsButNotACallMadeSince() async throws {
        let (harness, afterLogout) = try await logOutWithPlayersShown()
        XCTAssertEqual(
            harness.client.database.collection("players").count, 2,
            "the cache in memory waits for the server's removals")
        let stored = try SQLiteStore(fileURL: file).load()
        XCTAssertEqual(
            stored.documents.map(\.key.collectionName), ["todos"],
            "what the last user saw is gone from the disk; the new call's stub effect stays")
        XCTAssertEqual(
            stored.subscriptions, [],
            "the last user's subscriptions are erased too, though still active (OfflineFirst.md)")
        XCTAssertEqual(
            stored.methods.map(\.id), [afterLogout],
            "a call made after the logout is not the last user's: it stays durable")
        XCTAssertEqual(stored.serverDocuments.map(\.key.collectionName), ["todos"], "its stub's server copy stays too")

        // Completing it removes it from the disk as usual.
        harness.receive(.result(id: afterLogout, result: nil, error: nil))
        harness.receive(.updated(methodIDs: [afterLogout]))
        harness.flushData()
        harness.client.waitUntilPersisted()
        XCTAssertEqual(try SQLiteStore(fileURL: file).load().methods, [])
    }

    func testKeepsCacheOnLogoutKeepsTheDocuments() async throws {
        let (_, afterLogout) = try await logOutWithPlayersShown { $0.persistence?.keepsCacheOnLogout = true }
        let stored = try SQLiteStore(fileURL: file).load()
        XCTAssertEqual(Set(stored.documents.map(\.key.documentID)).subtracting(["ada", "gauss"]).count, 1, "the todo")
        XCTAssertEqual(Set(stored.documents.map(\.key.collectionName)), ["players", "todos"])
        XCTAssertEqual(stored.methods.map(\.id), [afterLogout])
    }
}
