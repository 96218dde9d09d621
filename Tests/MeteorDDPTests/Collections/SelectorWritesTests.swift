import EJSON
import XCTest

@testable import MeteorDDP

/// Updates and removals by selector: Meteor's rule for untrusted code (by id only), and stubs (trusted) with any
/// selector, `multi`, `upsert` and the positional `$`.
final class SelectorWritesTests: XCTestCase {
    private func connected() -> ClientHarness {
        let harness = ClientHarness()
        harness.establishConnection()
        for (id, list, done) in [("t1", "L1", false), ("t2", "L1", true), ("t3", "L2", false)] {
            harness.receive(
                .added(
                    collection: "todos", id: id,
                    fields: ["listId": .string(list), "done": .bool(done), "tags": ["a", "b"]]))
        }
        harness.flushData()
        return harness
    }

    func testUntrustedCodeMayOnlyUpdateOrRemoveByID() async throws {
        let harness = connected()
        let todos = harness.client.collection("todos")
        do {
            _ = try await todos.update(["listId": "L1"], ["$set": ["done": true]])
            XCTFail("a selector other than an id was accepted")
        } catch let error as MeteorError {
            XCTAssertEqual(error.error, .number(403))
            XCTAssertEqual(error.reason, "Not permitted. Untrusted code may only update documents by ID.")
        }
        do {
            _ = try await todos.remove(matching: ["done": true])
            XCTFail("a selector other than an id was accepted")
        } catch let error as MeteorError {
            XCTAssertEqual(error.reason, "Not permitted. Untrusted code may only remove documents by ID.")
        }
        harness.settle()
        XCTAssertFalse(harness.sent.contains { if case .method = $0 { true } else { false } }, "nothing was sent")
        XCTAssertEqual(harness.document("todos", "t1")?["done"], false)
    }

    func testAnUpdateByIDSendsTheOptionsAndItsStubAppliesThem() async throws {
        let harness = connected()
        let todos = harness.client.collection("todos")
        let task = Task {
            try await todos.update(
                "t1", ["$push": ["tags": ["$each": ["c"], "$position": 0]]], options: UpdateOptions(upsert: true))
        }
        await harness.transport.waitUntilSent(count: 1) { if case .method = $0 { true } else { false } }
        XCTAssertEqual(harness.document("todos", "t1")?["tags"], ["c", "a", "b"], "the stub changed the cache at once")
        guard case .method(let id, "/todos/update", let params, _)? = harness.sent.last else {
            return XCTFail("no update sent")
        }
        XCTAssertEqual(params.last, ["upsert": true])
        harness.receive(.changed(collection: "todos", id: "t1", fields: ["tags": ["c", "a", "b"]], cleared: []))
        harness.receive(.result(id: id, result: 1, error: nil))
        harness.receive(.updated(methodIDs: [id]))
        harness.flushData()
        let changed = try await value(of: task, within: 5)
        XCTAssertEqual(changed, 1)
    }

    func testStubsUpdateAndRemoveBySelector() throws {
        let harness = connected()
        let client = harness.client
        _ = client.collection("todos")
        client.defineStub("todos.badPosition") { context in
            // No condition on an array in the selector: there is no position for `$`.
            .number(Double(try context.collection("todos").update(["listId": "L2"], ["$set": ["tags.$": "z"]])))
        }
        XCTAssertThrowsError(
            try client.call("todos.badPosition", options: MethodOptions(throwStubExceptions: true)) { _ in }
        ) { error in
            XCTAssertEqual((error as? MethodError)?.kind, .stubFailed)
            XCTAssertEqual(
                (error as? MethodError)?.stubErrorDescription,
                "The positional operator did not find the match needed from the query")
        }
        client.defineStub("todos.finishList") { context in
            .number(
                Double(
                    try context.collection("todos").update(
                        ["listId": context.params[0] ?? nil], ["$set": ["done": true]],
                        options: UpdateOptions(multi: true))))
        }
        let value = try client.call("todos.finishList", params: ["L1"], options: MethodOptions(returnStubValue: true)) {
            _ in
        }
        XCTAssertEqual(value, 2)
        XCTAssertEqual(harness.document("todos", "t1")?["done"], true)
        XCTAssertEqual(harness.document("todos", "t3")?["done"], false)

        client.defineStub("todos.retag") { context in
            .number(
                Double(try context.collection("todos").update(["_id": "t3", "tags": "b"], ["$set": ["tags.$": "B"]])))
        }
        _ = try client.call("todos.retag") { _ in }
        XCTAssertEqual(
            harness.document("todos", "t3")?["tags"], ["a", "B"], "the positional $ is where the selector matched")

        client.defineStub("todos.upsert") { context in
            .number(
                Double(
                    try context.collection("todos").update(
                        ["listId": "L9", "done": false], ["$set": ["title": "new"], "$setOnInsert": ["n": 1]],
                        options: UpdateOptions(upsert: true))))
        }
        _ = try client.call("todos.upsert") { _ in }
        let upserted = try client.collection("todos").findOne(["listId": "L9"])
        XCTAssertEqual(
            upserted.map { EJSONValue.object($0.fields) }, ["listId": "L9", "done": false, "title": "new", "n": 1])

        client.defineStub("todos.clear") { context in
            .number(Double(try context.collection("todos").remove(matching: ["done": true])))
        }
        XCTAssertEqual(try client.call("todos.clear", options: MethodOptions(returnStubValue: true)) { _ in }, 2)
        XCTAssertEqual(try client.collection("todos").count(["done": true]), 0)
    }
}
