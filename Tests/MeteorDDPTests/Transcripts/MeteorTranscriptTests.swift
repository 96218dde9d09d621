import EJSON
import XCTest

@testable import MeteorDDP

/// Meteor's own client, recorded frame by frame, replayed against ours.
final class MeteorTranscriptTests: XCTestCase {
    private func connect(_ harness: ClientHarness) {
        harness.client.connect()
        harness.settle()
        harness.transport.open()
        harness.settle()
    }

    func testHandshake() throws {
        let harness = ClientHarness()
        try TranscriptPlayer("handshake", harness: harness).play(actions: [
            "socket (re)connected": { self.connect(harness) }
        ])
        XCTAssertEqual(harness.status, .connected)
    }

    func testSubscriptionsAndData() throws {
        let harness = ClientHarness()
        var todos: Subscription?
        var noArgs: Subscription?
        var missing: Subscription?
        try TranscriptPlayer("subscriptions and data", harness: harness).play(actions: [
            "socket (re)connected": {
                self.connect(harness)
                harness.receive(.connected(session: "S1"))
                todos = harness.client.subscribe("todos", params: ["listA", ["limit": 10]], notInUseTimeout: .zero)
                noArgs = harness.client.subscribe("noArgs", notInUseTimeout: .zero)
                missing = harness.client.subscribe("missing")
            },
            "handle.stop() sends unsub": { todos?.stop() },
            "messages without a msg field": { noArgs?.stop() }
        ])
        XCTAssertEqual(todos?.status, .stopped)
        XCTAssertEqual(noArgs?.status, .stopped)
        guard case .failed(let error)? = missing?.status else { return XCTFail("missing must fail") }
        XCTAssertEqual(error.meteorError.reason, "Subscription 'missing' not found")
        let cache = harness.client.database
        XCTAssertEqual(
            cache.document(DocumentKey(collectionName: "todos", documentID: "t2")).map { EJSONValue.object($0.fields) },
            ["text": "eggs", "done": true])
        XCTAssertNil(cache.document(DocumentKey(collectionName: "todos", documentID: "t3")))
        XCTAssertNotNil(
            cache.document(DocumentKey(collectionName: "later", documentID: "L1")),
            "data for a collection nobody asked for is kept")
        XCTAssertNotNil(
            cache.document(DocumentKey(collectionName: "todos", documentID: "abc")),
            "\"-abc\" on the wire is the id \"abc\"")
        XCTAssertEqual(harness.status, .connected, "bad frames were survived")
    }

    func testWaitMethods() throws {
        let harness = ClientHarness()
        try TranscriptPlayer("wait methods", harness: harness).play(actions: [
            "socket (re)connected": {
                self.connect(harness)
                harness.receive(.connected(session: "S1"))
                _ = try harness.client.call("a") { _ in }
                _ = try harness.client.call("w", options: MethodOptions(wait: true)) { _ in }
                _ = try harness.client.call("b") { _ in }
                _ = try harness.client.call("c") { _ in }
            }
        ])
        XCTAssertNotNil(
            harness.document("todos", "d1"), "the data held during the wait method was applied after its updated")
    }

    func testMethodsAndLatencyCompensation() throws {
        let harness = ClientHarness()
        harness.client.defineStub("addTodo") { context in
            try context.collection("todos").insert(["text": context.params[0] ?? nil, "done": false]).map {
                .string($0)
            }
        }
        harness.client.defineStub("setDone") { context in
            try context.collection("todos").update(context.params[0]?.stringValue ?? "", ["$set": ["done": true]])
            return nil
        }
        struct Exploded: Error {}
        harness.client.defineStub("failingStub") { _ in throw Exploded() }
        let results = ResultsLog()
        try TranscriptPlayer("methods and latency compensation", harness: harness).play(actions: [
            "socket (re)connected": {
                self.connect(harness)
                harness.receive(.connected(session: "S1"))
            },
            "call with a stub that inserts": {
                _ = try harness.client.call("addTodo", params: ["milk"]) { results.record("1", $0) }
            },
            "updated BEFORE result": {
                _ = try harness.client.call("setDone", params: ["GQJf4S4bBLHoiXLZR"]) { results.record("2", $0) }
            },
            "stub insert that the server never confirms": {
                _ = try harness.client.call("addTodo", params: ["ghost"]) { results.record("3", $0) }
            },
            "method without stub": {
                _ = try harness.client.call(
                    "noStub", params: [1, .date(millisecondsSince1970: 0), .binary(Data([1, 2]))]
                ) { results.record("4", $0) }
            },
            "internal server errors": { _ = try harness.client.call("boom") { results.record("5", $0) } },
            "a throwing stub is logged": { _ = try harness.client.call("failingStub") { results.record("6", $0) } }
        ])
        harness.client.callbackQueue.sync {}
        XCTAssertEqual(results.ids, ["1", "2", "3", "4", "5", "6"], "every call completed once, in order")
        XCTAssertEqual(
            harness.document("todos", "GQJf4S4bBLHoiXLZR").map { EJSONValue.object($0.fields) },
            ["text": "milk", "done": true, "createdAt": .date(millisecondsSince1970: 1_700_000_000_000)])
        XCTAssertEqual(
            harness.client.database.collection("todos").count, 1, "the unconfirmed stub inserts were reverted")
    }

    func testReconnect() throws {
        let harness = ClientHarness()
        harness.client.defineStub("addTodo") { context in
            try context.collection("todos").insert(["text": context.params[0] ?? nil]).map { .string($0) }
        }
        let results = ResultsLog()
        let payment = ResultBox()
        var todos: Subscription?
        try TranscriptPlayer("reconnect", harness: harness).play(actions: [
            "socket (re)connected": {
                self.connect(harness)
                harness.receive(.connected(session: "SESSION-1"))
                todos = harness.client.subscribe("todos")
                _ = try harness.client.call("addTodo", params: ["stubbed"]) { results.record("1", $0) }
                _ = try harness.client.call("payment", params: [42], options: MethodOptions(noRetry: true)) {
                    payment.set($0)
                    results.record("2", $0)
                }
                _ = try harness.client.call("halfDone") { results.record("3", $0) }
            },
            "connection lost": {
                let client = harness.client
                client.onReconnect("reauth") {
                    _ = try? client.call("reauth", params: ["token"]) { results.record("4", $0) }
                }
                harness.settle()
                harness.transport.fail()
                harness.settle()
                harness.advance(by: .milliseconds(10))
                harness.transport.open()
            }
        ])
        harness.client.callbackQueue.sync {}
        XCTAssertEqual(todos?.status, .ready)
        XCTAssertEqual(Set(results.ids), ["1", "2", "3", "4"], "every call completed exactly once")
        XCTAssertEqual(results.ids.count, 4)
        guard case .failure(let error as MethodError)? = payment.result else { return XCTFail("payment must fail") }
        XCTAssertEqual(error.kind, .invocationFailed)
        XCTAssertEqual(
            harness.client.database.collection("todos").documents.map(\.id), ["old1"],
            "the reset dropped the stub-inserted document the server never sent")
    }
}
