import EJSON
import TestSupport
import XCTest

@_spi(Testing) @testable import MeteorDDP

/// Writing relationships: link, unlink and remove write the reference fields (both sides when stored two-way)
/// through the collections' update and remove methods, every stub in one transaction, and the server's answer
/// completes them.
final class RelationshipWritesTests: XCTestCase {
    private struct TodoList: Codable, Sendable, Equatable {
        var _id: String?
        var name: String
    }

    private struct Todo: Codable, Sendable, Equatable {
        var _id: String?
        var text: String
    }

    private struct Tag: Codable, Sendable, Equatable {
        var _id: ObjectID
        var name: String
    }

    private func harness(_ messages: [ServerMessage]) -> ClientHarness {
        let harness = ClientHarness()
        harness.establishConnection()
        for message in messages { harness.receive(message) }
        harness.flushData()
        return harness
    }

    /// The method calls sent, as (id, method, params).
    private func calls(_ harness: ClientHarness) -> [(id: String, name: String, params: [EJSONValue])] {
        harness.sent.compactMap { message in
            guard case .method(let id, let name, let params, _) = message else { return nil }
            return (id, name, params)
        }
    }

    /// Waits until `total` calls were sent, then answers the last `new` of them with success and `updated`, after
    /// `data`; returns those.
    private func answer(_ harness: ClientHarness, total: Int, new: Int, data: [ServerMessage] = []) async
        -> [(id: String, name: String, params: [EJSONValue])]
    {
        await harness.transport.waitUntilSent(count: total) { if case .method = $0 { true } else { false } }
        let sent = calls(harness).suffix(new).map { $0 }
        for message in data { harness.receive(message) }
        for call in sent { harness.receive(.result(id: call.id, result: 1, error: nil)) }
        harness.receive(.updated(methodIDs: sent.map(\.id)))
        return sent
    }

    func testLinkingAToOneStoredBothWaysWritesEverySideInOneTransaction() async throws {
        let harness = harness([
            .added(collection: "lists", id: "home", fields: ["name": "Home", "todoIds": ["t1"]]),
            .added(collection: "lists", id: "work", fields: ["name": "Work", "todoIds": []]),
            .added(collection: "todos", id: "t1", fields: ["text": "milk", "listId": "home"])
        ])
        let lists = harness.client.collection("lists", as: TodoList.self)
        let todos = harness.client.collection("todos", as: Todo.self)
        let listOfTodo = todos.toOne(lists, idIn: "listId", mirroredIn: "todoIds")
        let commits = ChangesRecorder(harness.client.database)
        let link = Task { try await listOfTodo.link("t1", to: "work") }
        let serverData: [ServerMessage] = [
            .changed(collection: "todos", id: "t1", fields: ["listId": "work"], cleared: []),
            .changed(collection: "lists", id: "work", fields: ["todoIds": ["t1"]], cleared: []),
            .changed(collection: "lists", id: "home", fields: ["todoIds": []], cleared: [])
        ]
        let sent = await answer(harness, total: 3, new: 3, data: serverData)
        XCTAssertEqual(sent.map(\.name), ["/todos/update", "/lists/update", "/lists/update"])
        XCTAssertEqual(
            sent.map(\.params),
            [
                [["_id": "t1"], ["$set": ["listId": "work"]], [:]],
                [["_id": "work"], ["$addToSet": ["todoIds": "t1"]], [:]],
                [["_id": "home"], ["$pull": ["todoIds": "t1"]], [:]]
            ])
        try await value(of: link, within: 5)
        // The stubs' writes: one transaction for the three documents (the first commit after the call).
        XCTAssertEqual(
            commits.changes.first.map { Set($0.affectedDocumentKeys.map(\.documentID)) }, ["t1", "work", "home"],
            "every side in one transaction")
        XCTAssertEqual(harness.document("todos", "t1")?["listId"], "work")
        XCTAssertEqual(harness.document("lists", "work")?["todoIds"], ["t1"])
        XCTAssertEqual(harness.document("lists", "home")?["todoIds"], [])
        XCTAssertEqual(try listOfTodo.related(to: "t1").map(\.name), ["Work"])
    }

    /// A stub that throws inside the joint transaction (a mirror that is not an array refuses `$addToSet`): its call
    /// still goes out, and its warning is logged once the transaction committed (a log handler is app code).
    func testAStubFailingInTheJointTransactionIsLoggedAfterItCommits() async throws {
        let clientBox = Locked<DDPClient?>(nil)
        let inTransaction = Locked<[Bool]>([])
        let log = LogRecorder {
            guard let client = clientBox.value else { return }
            inTransaction.mutate { $0.append(client.database.isInTransactionOnCurrentThread) }
        }
        let harness = ClientHarness { $0.logger = log.logger }
        clientBox.mutate { $0 = harness.client }
        harness.establishConnection()
        harness.receive(.added(collection: "lists", id: "home", fields: ["name": "Home", "todoIds": "not an array"]))
        harness.receive(.added(collection: "todos", id: "t1", fields: ["text": "milk"]))
        harness.flushData()
        inTransaction.mutate { $0 = [] }
        let listOfTodo = harness.client.collection("todos", as: Todo.self).toOne(
            harness.client.collection("lists", as: TodoList.self), idIn: "listId", mirroredIn: "todoIds")
        let link = Task { try await listOfTodo.link("t1", to: "home") }
        let sent = await answer(harness, total: 2, new: 2)
        XCTAssertEqual(sent.map(\.name), ["/todos/update", "/lists/update"], "the failing stub's call goes out too")
        try await value(of: link, within: 5)
        XCTAssertTrue(
            log.lines.contains { $0.contains("Exception while simulating the effect of invoking '/lists/update'") })
        XCTAssertFalse(inTransaction.value.isEmpty)
        XCTAssertFalse(inTransaction.value.contains(true), "logged outside the transaction")
    }

    func testManyToManyWithObjectIDsLinksAndUnlinksBothArrays() async throws {
        let red = ObjectID("5f1d7a3c9e1b2a0012345601")!
        let harness = harness([
            .added(collection: "tags", id: red.hexString, fields: ["name": "red", "postIds": []]),
            .added(collection: "posts", id: "p1", fields: ["name": "one", "tagIds": []])
        ])
        let posts = harness.client.collection("posts", as: TodoList.self)
        let tags = harness.client.collection("tags", as: Tag.self)
        let tagsOfPost = posts.toMany(tags, idsIn: "tagIds", mirroredIn: "postIds")
        let link = Task { try await tagsOfPost.link("p1", to: red.hexString) }
        let linked = await answer(
            harness, total: 2, new: 2,
            data: [
                .changed(collection: "posts", id: "p1", fields: ["tagIds": [red.ejsonValue]], cleared: []),
                .changed(collection: "tags", id: red.hexString, fields: ["postIds": ["p1"]], cleared: [])
            ])
        XCTAssertEqual(
            linked.map(\.params),
            [
                [["_id": "p1"], ["$addToSet": ["tagIds": red.ejsonValue]], [:]],
                [["_id": red.ejsonValue], ["$addToSet": ["postIds": "p1"]], [:]]
            ], "an ObjectID's id is written as the ObjectID")
        try await value(of: link, within: 5)
        XCTAssertEqual(try tagsOfPost.related(to: "p1").map(\.name), ["red"])

        let unlink = Task { try await tagsOfPost.unlink("p1", from: red.hexString) }
        let unlinked = await answer(
            harness, total: 4, new: 2,
            data: [
                .changed(collection: "posts", id: "p1", fields: ["tagIds": []], cleared: []),
                .changed(collection: "tags", id: red.hexString, fields: ["postIds": []], cleared: [])
            ])
        XCTAssertEqual(
            unlinked.map(\.params),
            [
                [["_id": "p1"], ["$pull": ["tagIds": red.ejsonValue]], [:]],
                [["_id": red.ejsonValue], ["$pull": ["postIds": "p1"]], [:]]
            ])
        try await value(of: unlink, within: 5)
        XCTAssertEqual(try tagsOfPost.related(to: "p1"), [])
    }

    func testRemovingLeavesReferencesDanglingUnlessAskedToClearThem() async throws {
        let harness = harness([
            .added(collection: "lists", id: "home", fields: ["name": "Home"]),
            .added(collection: "lists", id: "work", fields: ["name": "Work"]),
            .added(collection: "todos", id: "t1", fields: ["text": "milk", "listId": "home"]),
            .added(collection: "todos", id: "t2", fields: ["text": "bread", "listId": "home"]),
            .added(collection: "todos", id: "t3", fields: ["text": "report", "listId": "work"])
        ])
        let lists = harness.client.collection("lists", as: TodoList.self)
        let todos = harness.client.collection("todos", as: Todo.self)
        let todosOfList = lists.toMany(todos, referencedBy: "listId")
        let commits = ChangesRecorder(harness.client.database)

        let cleared = Task { try await todosOfList.removeSource("home", references: .clear) }
        let sent = await answer(
            harness, total: 3, new: 3,
            data: [
                .changed(collection: "todos", id: "t1", fields: [:], cleared: ["listId"]),
                .changed(collection: "todos", id: "t2", fields: [:], cleared: ["listId"]),
                .removed(collection: "lists", id: "home")
            ])
        XCTAssertEqual(sent.map(\.name).sorted(), ["/lists/remove", "/todos/update", "/todos/update"])
        XCTAssertEqual(sent.last?.params, [["_id": "home"]], "the removal goes last")
        XCTAssertEqual(
            Set(sent.dropLast().map { $0.params.first }), [["_id": "t1"], ["_id": "t2"]])
        XCTAssertEqual(sent.first?.params.dropFirst().first, ["$unset": ["listId": ""]])
        try await value(of: cleared, within: 5)
        XCTAssertEqual(
            commits.changes.first.map { Set($0.affectedDocumentKeys.map(\.documentID)) }, ["home", "t1", "t2"],
            "the removal and the clearing in one transaction")
        XCTAssertNil(harness.document("todos", "t1")?["listId"])

        let dangling = Task { try await todosOfList.removeSource("work") }
        let removal = await answer(harness, total: 4, new: 1, data: [.removed(collection: "lists", id: "work")])
        XCTAssertEqual(removal.map(\.name), ["/lists/remove"], "nothing else is written")
        try await value(of: dangling, within: 5)
        XCTAssertEqual(harness.document("todos", "t3")?["listId"], "work", "left dangling")
        XCTAssertEqual(try todos.toOne(lists, idIn: "listId").related(to: "t3"), [], "and it reads as absent")
    }
}
