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
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "restored-outcome-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    private func launch(_ persistence: Persistence? = nil) -> ClientHarness {
        let harness = ClientHarness { $0.persistence = persistence ?? .sqlite(at: self.file) }
        harness.client.defineStub("addTodo") { context in
            try context.collection("todos").insert(["title": context.params.first ?? .null, "c": 0]).map { .string($0) }
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
        let todoID = try XCTUnwrap(
            try first.client.call("addTodo", params: ["milk"], options: MethodOptions(returnStubValue: true)) { _ in }?
                .stringValue)
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
        XCTAssertEqual(
            harness.restoredOutcomeSummaries, ["alreadyApplied 409", "succeeded"],
            "the insert is judged by what its stub set (title), not by c, which the later bump changed")
        XCTAssertEqual(harness.client.restoredCalls.outcomes.map(\.source), [.sentAgain, .sentAgain])
    }

    func testACallWhoseSavedAnswerIsARefusalIsAlreadyAppliedWhenTheServerHasItsEffect() throws {
        let todo = DocumentKey(collectionName: "todos", documentID: "t1")
        let store = ScriptedClientStore(
            StoredState(
                documents: [StoredDocument(key: todo, fields: ["title": "milk", "c": 0])],
                serverDocuments: [
                    StoredServerDocument(key: todo, fields: ["title": "milk", "c": 0], writtenByMethods: ["1"])
                ],
                methods: [
                    StoredMethod(
                        id: "1", name: "addTodo", params: ["milk"], randomSeed: "s", wait: false, noRetry: false,
                        stubWrote: [todo],
                        result: .error(MeteorError(error: .number(409), reason: "Duplicate key")))
                ]
            ))
        let harness = launch(.store(store))
        let todos = harness.client.subscribe("todos")
        harness.establishConnection()
        harness.receive(.added(collection: "todos", id: "t1", fields: ["title": "milk", "c": 0]))
        harness.receive(.ready(subscriptionIDs: [todos.id]))
        harness.flushData()
        XCTAssertEqual(
            harness.restoredOutcomeSummaries, ["alreadyApplied 409"],
            "the 409 was saved when the call was sent again, before the kill")
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
        let store = ScriptedClientStore(
            StoredState(
                documents: [StoredDocument(key: todo, fields: ["title": "milk", "c": 0])],
                methods: [
                    StoredMethod(
                        id: "1", name: "addTodo", params: ["milk"], randomSeed: "s", wait: false, noRetry: false,
                        stubWrote: [todo],
                        stubEffects: [StoredStubEffect(key: todo, set: ["title": "milk", "c": 0])])
                ]
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
            methods: [
                StoredMethod(
                    id: "1", name: "addTodo", params: ["milk"], randomSeed: "s", wait: false, noRetry: false,
                    stubWrote: [todo])
            ]
        )
        XCTAssertEqual(DDPClient.restoredStubEffects(state)["1"], [StoredStubEffect(key: todo, set: ["title": "milk"])])
    }

    // MARK: - Every stored call's effect is on disk (issue 33, item 2)

    /// Run 1: a subscription made first (it goes out after the calls, as in Meteor), two offline inserts on disk, then
    /// connected. Returns the harness, the subscription and the two todos' ids.
    private func launchWithTwoInsertsSentBeforeTheirSubscription(_ store: ScriptedClientStore) throws -> (
        ClientHarness, Subscription, String, String
    ) {
        let first = launch(.store(store))
        let todos = first.client.subscribe("todos")
        let milk = try XCTUnwrap(
            try first.client.call("addTodo", params: ["milk"], options: MethodOptions(returnStubValue: true)) { _ in }?
                .stringValue)
        let eggs = try XCTUnwrap(
            try first.client.call("addTodo", params: ["eggs"], options: MethodOptions(returnStubValue: true)) { _ in }?
                .stringValue)
        first.client.waitUntilPersisted()
        first.establishConnection()
        XCTAssertEqual(
            first.sent.map {
                if case .method(let id, _, _, _) = $0 { id } else if case .sub = $0 { "sub" } else { "-" }
            }, ["-", "1", "2", "sub"],
            "the calls go out before the subscription")
        return (first, todos, milk, eggs)
    }

    private func storedFields(_ store: ScriptedClientStore, _ id: String) -> EJSONObject? {
        store.stored.documents.first { $0.key == DocumentKey(collectionName: "todos", documentID: id) }?.fields
    }

    /// Run 2 from what run 1 left: connects, the server has both todos (with its own `owner` field) and answers the
    /// re-sent calls; the cache ends as the server's data, with nothing of the calls left on disk.
    private func relaunchAndReconcile(
        _ stored: StoredState, milk: String, eggs: String, resent: [String],
        file: StaticString = #filePath, line: UInt = #line
    ) {
        let store = ScriptedClientStore(stored)
        let second = launch(.store(store))
        let todos = second.client.subscribe("todos")
        second.establishConnection()
        second.receive(.added(collection: "todos", id: milk, fields: ["title": "milk", "c": 0, "owner": "ada"]))
        second.receive(.added(collection: "todos", id: eggs, fields: ["title": "eggs", "c": 0, "owner": "ada"]))
        second.receive(.ready(subscriptionIDs: [todos.id]))
        for id in resent {
            second.receive(.result(id: id, result: .string(id == "1" ? milk : eggs), error: nil))
            second.receive(.updated(methodIDs: [id]))
        }
        second.flushData()
        XCTAssertEqual(
            second.document("todos", milk)?.fields, ["title": "milk", "c": 0, "owner": "ada"], file: file, line: line)
        XCTAssertEqual(
            second.document("todos", eggs)?.fields, ["title": "eggs", "c": 0, "owner": "ada"], file: file, line: line)
        XCTAssertEqual(second.restoredOutcomeSummaries, ["succeeded", "succeeded"], file: file, line: line)
        second.client.waitUntilPersisted()
        XCTAssertEqual(
            store.stored.methods.map(\.id), [], "both calls completed and left the store", file: file, line: line)
        XCTAssertEqual(store.stored.serverDocuments, [], file: file, line: line)
        XCTAssertEqual(storedFields(store, milk), ["title": "milk", "c": 0, "owner": "ada"], file: file, line: line)
        XCTAssertEqual(storedFields(store, eggs), ["title": "eggs", "c": 0, "owner": "ada"], file: file, line: line)
        withExtendedLifetime(todos) {}
    }

    func testAStoredCallsEffectIsOnDiskAfterItsUpdatedAndResultWhileItsDocumentHasNotArrived() throws {
        let store = ScriptedClientStore()
        let (first, todos, milk, eggs) = try launchWithTwoInsertsSentBeforeTheirSubscription(store)
        // The server ran call 1 before it had the subscription: no data before its `updated`.
        first.receive(.updated(methodIDs: ["1"]))
        first.receive(.result(id: "1", result: .string(milk), error: nil))
        first.flushData()
        XCTAssertNil(
            first.document("todos", milk),
            "in memory the server's version (none yet) shows after `updated`, as in Meteor")
        first.client.waitUntilPersisted()
        // Killed here: call 1 waits for call 2's data to complete, so it is on disk with its saved answer.
        XCTAssertEqual(store.stored.methods.map(\.id), ["1", "2"])
        XCTAssertEqual(store.stored.methods.first?.result, .value(.string(milk)))

        let second = launch(.store(ScriptedClientStore(store.stored)))
        XCTAssertEqual(second.client.restoredCalls.calls.map(\.id), ["1", "2"])
        XCTAssertEqual(
            second.document("todos", milk)?.fields, ["title": "milk", "c": 0],
            "restored call 1's effect at the first read")
        XCTAssertEqual(second.document("todos", eggs)?.fields, ["title": "eggs", "c": 0])
        relaunchAndReconcile(store.stored, milk: milk, eggs: eggs, resent: ["2"])
        withExtendedLifetime(todos) {}
    }

    func testAStoredCallsEffectIsOnDiskAfterItsUpdatedAlone() throws {
        let store = ScriptedClientStore()
        let (first, todos, milk, eggs) = try launchWithTwoInsertsSentBeforeTheirSubscription(store)
        first.receive(.updated(methodIDs: ["1"]))
        first.flushData()
        XCTAssertNil(first.document("todos", milk))
        first.client.waitUntilPersisted()

        let second = launch(.store(ScriptedClientStore(store.stored)))
        XCTAssertEqual(second.client.restoredCalls.calls.map(\.id), ["1", "2"])
        XCTAssertEqual(
            second.document("todos", milk)?.fields, ["title": "milk", "c": 0],
            "restored call 1's effect at the first read")
        relaunchAndReconcile(store.stored, milk: milk, eggs: eggs, resent: ["1", "2"])
        withExtendedLifetime(todos) {}
    }

    func testTheServersVersionReachesTheDiskWithTheRemovalOfTheCallThatHeldIt() throws {
        let store = ScriptedClientStore()
        let (first, todos, milk, eggs) = try launchWithTwoInsertsSentBeforeTheirSubscription(store)
        first.receive(.updated(methodIDs: ["1"]))
        first.receive(.result(id: "1", result: .string(milk), error: nil))
        // The subscription's data now arrives: milk goes to the cache (call 1 is updated), eggs is kept aside.
        first.receive(.added(collection: "todos", id: milk, fields: ["title": "milk", "c": 0, "owner": "ada"]))
        first.receive(.added(collection: "todos", id: eggs, fields: ["title": "eggs", "c": 0, "owner": "ada"]))
        first.receive(.ready(subscriptionIDs: [todos.id]))
        first.flushData()
        XCTAssertEqual(first.document("todos", milk)?.fields, ["title": "milk", "c": 0, "owner": "ada"])
        first.client.waitUntilPersisted()
        // Call 1 is still on disk (its data waits for call 2's): so is its stub's version of milk.
        XCTAssertEqual(store.stored.methods.map(\.id), ["1", "2"])
        XCTAssertEqual(storedFields(store, milk), ["title": "milk", "c": 0])
        let killedBeforeCompletion = store.stored
        let restored = launch(.store(ScriptedClientStore(killedBeforeCompletion)))
        XCTAssertEqual(
            restored.document("todos", milk)?.fields, ["title": "milk", "c": 0],
            "restored call 1's effect at the first read")

        // Call 2 completes, and call 1 with it: both leave the store, and the server's versions are written with them.
        first.receive(.result(id: "2", result: .string(eggs), error: nil))
        first.receive(.updated(methodIDs: ["2"]))
        first.flushData()
        first.client.waitUntilPersisted()
        XCTAssertEqual(store.stored.methods.map(\.id), [])
        XCTAssertEqual(store.stored.serverDocuments, [])
        XCTAssertEqual(storedFields(store, milk), ["title": "milk", "c": 0, "owner": "ada"])
        XCTAssertEqual(storedFields(store, eggs), ["title": "eggs", "c": 0, "owner": "ada"])
        let second = launch(.store(ScriptedClientStore(store.stored)))
        XCTAssertEqual(second.client.restoredCalls.calls.map(\.id), [])
        XCTAssertEqual(second.document("todos", milk)?.fields, ["title": "milk", "c": 0, "owner": "ada"])
        XCTAssertEqual(second.document("todos", eggs)?.fields, ["title": "eggs", "c": 0, "owner": "ada"])

        // The run killed before the completion reconciles to the same data.
        relaunchAndReconcile(killedBeforeCompletion, milk: milk, eggs: eggs, resent: ["2"])
        withExtendedLifetime(todos) {}
    }

    func testAStoredStubWritingAHeldDocumentWritesItsCurrentStateAndItsClaim() throws {
        let store = ScriptedClientStore()
        let first = launch(.store(store))
        let milk = try XCTUnwrap(
            try first.client.call("addTodo", params: ["milk"], options: MethodOptions(returnStubValue: true)) { _ in }?
                .stringValue)
        _ = try first.client.call("addTodo", params: ["eggs"]) { _ in }
        first.client.waitUntilPersisted()
        first.establishConnection()
        // The server's milk arrives (kept aside), then call 1's `updated`: the cache shows the server's version, the
        // disk keeps the stub's while call 1 is stored.
        first.receive(.added(collection: "todos", id: milk, fields: ["title": "milk", "c": 0, "owner": "ada"]))
        first.receive(.updated(methodIDs: ["1"]))
        first.flushData()
        first.client.waitUntilPersisted()
        XCTAssertEqual(storedFields(store, milk), ["title": "milk", "c": 0])
        // A stored stub writes milk: the disk gets its version, and its claim (with the server's version as original).
        _ = try first.client.call("bump", params: [.string(milk)]) { _ in }
        first.flushData()
        first.client.waitUntilPersisted()
        XCTAssertEqual(first.document("todos", milk)?.fields, ["title": "milk", "c": 1, "owner": "ada"])
        XCTAssertEqual(storedFields(store, milk), ["title": "milk", "c": 1, "owner": "ada"])
        XCTAssertEqual(
            store.stored.serverDocuments.first { $0.key.documentID == milk },
            StoredServerDocument(
                key: DocumentKey(collectionName: "todos", documentID: milk),
                fields: ["title": "milk", "c": 0, "owner": "ada"], writtenByMethods: ["3"]))
        XCTAssertEqual(store.stored.methods.map(\.id), ["1", "2", "3"])
        let second = launch(.store(ScriptedClientStore(store.stored)))
        XCTAssertEqual(second.document("todos", milk)?.fields, ["title": "milk", "c": 1, "owner": "ada"])
    }

    func testLogoutReturnsOnlyOnceTheLastUsersDataIsOffTheDisk() async throws {
        let ada = DocumentKey(collectionName: "users", documentID: "ada")
        let store = ScriptedClientStore(
            StoredState(
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
        let logoutID = try XCTUnwrap(
            harness.sent.compactMap { if case .method(let id, "logout", _, _) = $0 { id } else { nil } }.first)
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
