import EJSON
import Foundation
import XCTest

@testable import MeteorDDP

/// What a restored call's outcome says (issue 33): a call the server had already applied is `alreadyApplied`, judged
/// by exactly what its own stub did, also when a later call changed the same document and when its saved answer is
/// the refusal; and logging out erases the last user's data from the disk before it returns.
final class RestoredOutcomeTests: XCTestCase {
    private var directory: URL!
    private var file: URL { directory.appendingPathComponent("cache.sqlite") }

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("restored-outcome-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    private func launch(_ persistence: Persistence? = nil) -> ClientHarness {
        let harness = ClientHarness { $0.persistence = persistence ?? .sqlite(at: self.file) }
        harness.client.defineStub("addTodo") { context in
            context.collection("todos").insert(["title": context.params.first ?? .null, "c": 0]).map { .string($0) }
        }
        harness.client.defineStub("bump") { context in
            guard let id = context.params.first?.stringValue else { return nil }
            return .number(Double(try context.collection("todos").update(id, ["$inc": ["c": 1]])))
        }
        return harness
    }

    func testAnInsertFollowedByAnUpdateOfItsDocumentIsAlreadyAppliedWhenTheServerHasBoth() throws {
        // Run 1, offline: addTodo, then bump on the todo it made. Both are on disk, unanswered.
        let first = launch()
        let todoID = try XCTUnwrap(try first.client.call("addTodo", params: ["milk"], options: MethodOptions(returnStubValue: true)) { _ in }?.stringValue)
        _ = try first.client.call("bump", params: [.string(todoID)]) { _ in }
        first.client.waitUntilPersisted()

        // Run 2: both had reached the server before the kill; sent again, the insert fails with 409 and the bump runs
        // a second time (at least once): the server's todo is {title: milk, c: 2}.
        let harness = launch()
        let todos = harness.client.subscribe("todos")
        harness.establishConnection()
        harness.receive(.added(collection: "todos", id: todoID, fields: ["title": "milk", "c": 2]))
        harness.receive(.ready(subscriptionIDs: [todos.id]))
        harness.receive(.result(id: "1", result: nil, error: MeteorError(error: .number(409), reason: "Duplicate key")))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.receive(.result(id: "2", result: 1, error: nil))
        harness.receive(.updated(methodIDs: ["2"]))
        harness.flushData()
        XCTAssertEqual(harness.restoredOutcomeSummaries, ["alreadyApplied 409", "succeeded"],
                       "the insert is judged by what its stub set (title), not by c, which the later bump changed")
        XCTAssertEqual(harness.client.restoredCalls.outcomes.map(\.source), [.sentAgain, .sentAgain])
    }

    func testACallWhoseSavedAnswerIsARefusalIsAlreadyAppliedWhenTheServerHasItsEffect() throws {
        let todo = DocumentKey(collectionName: "todos", documentID: "t1")
        let store = ScriptedClientStore(StoredState(
            documents: [StoredDocument(key: todo, fields: ["title": "milk", "c": 0])],
            serverDocuments: [StoredServerDocument(key: todo, fields: ["title": "milk", "c": 0], writtenByMethods: ["1"])],
            methods: [StoredMethod(
                id: "1", name: "addTodo", params: ["milk"], randomSeed: "s", wait: false, noRetry: false, stubWrote: [todo],
                result: .error(MeteorError(error: .number(409), reason: "Duplicate key")))]
        ))
        let harness = launch(.store(store))
        let todos = harness.client.subscribe("todos")
        harness.establishConnection()
        harness.receive(.added(collection: "todos", id: "t1", fields: ["title": "milk", "c": 0]))
        harness.receive(.ready(subscriptionIDs: [todos.id]))
        harness.flushData()
        XCTAssertEqual(harness.restoredOutcomeSummaries, ["alreadyApplied 409"], "the 409 was saved when the call was sent again, before the kill")
        XCTAssertEqual(harness.client.restoredCalls.outcomes.map(\.source), [.savedAnswer])
    }

    func testACallSaysWhenItIsOnDisk() async throws {
        let store = ScriptedClientStore(gated: true)
        let harness = launch(.store(store))
        let durable = expectation(description: "on disk")
        let stored = Locked<Bool?>(nil)
        var options = MethodOptions()
        options.onDurable = { value in
            stored.mutate { $0 = value }
            durable.fulfill()
        }
        _ = try harness.client.call("addTodo", params: ["milk"], options: options) { _ in }
        harness.settle()
        XCTAssertNil(stored.value, "not before its record is on disk")
        XCTAssertEqual(store.stored.methods.count, 0)
        store.gate?.open()
        await fulfillment(of: [durable], timeout: 10)
        XCTAssertEqual(stored.value, true)
        XCTAssertEqual(store.stored.methods.map(\.name), ["addTodo"], "on disk when it said so")

        // Not stored: a memory-only method (a login's parameters are credentials).
        let notStored = expectation(description: "told it is not stored")
        var loginOptions = MethodOptions()
        loginOptions.onDurable = { value in
            XCTAssertFalse(value)
            notStored.fulfill()
        }
        _ = try harness.client.call("login", params: [["resume": "t"]], options: loginOptions) { _ in }
        await fulfillment(of: [notStored], timeout: 10)
    }

    func testACallRefusedBeforeALateSubscriptionsDataArrivesIsJudgedOnceItHas() throws {
        // Restored: an unanswered addTodo; no stored subscription (the app subscribes after connecting).
        let todo = DocumentKey(collectionName: "todos", documentID: "t1")
        let store = ScriptedClientStore(StoredState(
            documents: [StoredDocument(key: todo, fields: ["title": "milk", "c": 0])],
            methods: [StoredMethod(
                id: "1", name: "addTodo", params: ["milk"], randomSeed: "s", wait: false, noRetry: false, stubWrote: [todo],
                stubEffects: [StoredStubEffect(key: todo, set: ["title": "milk", "c": 0])])]
        ))
        let harness = launch(.store(store))
        harness.establishConnection()
        let todos = harness.client.subscribe("todos")
        harness.settle()
        // The re-sent insert is refused (it ran before the restart) before the subscription's data arrives.
        harness.receive(.result(id: "1", result: nil, error: MeteorError(error: .number(409), reason: "Duplicate key")))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.flushData()
        XCTAssertEqual(harness.restoredOutcomeSummaries, [], "not judged while the todo's data is on its way")
        harness.receive(.added(collection: "todos", id: "t1", fields: ["title": "milk", "c": 0]))
        harness.receive(.ready(subscriptionIDs: [todos.id]))
        harness.flushData()
        harness.settle()
        XCTAssertEqual(harness.restoredOutcomeSummaries, ["alreadyApplied 409"])
    }

    func testAStoreWrittenBeforeStubEffectsWereRecordedStillJudgesByTheStoredDocument() {
        let todo = DocumentKey(collectionName: "todos", documentID: "t1")
        let state = StoredState(
            documents: [StoredDocument(key: todo, fields: ["title": "milk"])],
            methods: [StoredMethod(id: "1", name: "addTodo", params: ["milk"], randomSeed: "s", wait: false, noRetry: false, stubWrote: [todo])]
        )
        XCTAssertEqual(DDPClient.restoredStubEffects(state)["1"], [StoredStubEffect(key: todo, set: ["title": "milk"])])
    }

    func testLogoutReturnsOnlyOnceTheLastUsersDataIsOffTheDisk() async throws {
        let ada = DocumentKey(collectionName: "users", documentID: "ada")
        let store = ScriptedClientStore(StoredState(
            documents: [StoredDocument(key: ada, fields: ["emails": [["address": "ada@example.com"]]])],
            subscriptions: [StoredSubscription(name: "players", params: [])]
        ), gated: true)
        let harness = launch(.store(store))
        let players = harness.client.subscribe("players")
        harness.establishConnection()
        // The restored cache is reconciled once the subscription is ready (until then answers are held).
        harness.receive(.ready(subscriptionIDs: [players.id]))
        harness.flushData()
        let finished = Locked(false)
        let logout = Task {
            try await harness.client.logout()
            finished.mutate { $0 = true }
        }
        let transport = harness.transport
        try await withTimeout(5, "logout sent") {
            await transport.waitUntilSent(count: 1) { if case .method(_, "logout", _, _) = $0 { true } else { false } }
        }
        let logoutID = try XCTUnwrap(harness.sent.compactMap { if case .method(let id, "logout", _, _) = $0 { id } else { nil } }.first)
        harness.receive(.result(id: logoutID, result: nil, error: nil))
        harness.receive(.updated(methodIDs: [logoutID]))
        harness.flushData()
        harness.settle()
        // The account is cleared in memory, and the erasure is queued behind the gated disk: logout has not returned.
        XCTAssertFalse(finished.value, "logout returned before the erasure was on disk")
        store.gate?.open()
        try await withTimeout(10, "logout returns") { try await logout.value }
        // Straight after logout, as a process that exits at once would leave the disk.
        XCTAssertEqual(store.stored.documents, [], "nothing of the user's is left")
        XCTAssertEqual(store.stored.subscriptions, [], "the stored subscriptions are erased too")
        withExtendedLifetime(players) {}
    }
}
