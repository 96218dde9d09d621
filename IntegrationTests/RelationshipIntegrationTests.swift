import DDPTestServer
import EJSON
import Foundation
import MeteorDDP
import TestSupport
import XCTest

/// A live related query over DDPTestServer: lists with their todos follow the server's publications, and a method's
/// stub that moves a todo shows at once (latency compensation), before the server has answered; afterwards the
/// result equals the server's documents.
final class RelationshipIntegrationTests: XCTestCase {
    private var server: DDPTestServer!
    /// Holds the server's `todos.move` until the test has seen the stub's effect.
    private let gate = DispatchSemaphore(value: 0)

    struct TodoList: Codable, Sendable, Equatable {
        var _id: String?
        var name: String
    }

    struct Todo: Codable, Sendable, Equatable {
        var _id: String?
        var listId: String
        var text: String
    }

    override func setUp() async throws {
        server = DDPTestServer()
        try await server.start()
        server.publish("lists") { _ in [Cursor(collection: "lists"), Cursor(collection: "todos")] }
        server.method("todos.move") { [gate] context in
            // Bounded: a test that never signals fails on its own deadline, the server goes on.
            _ = gate.wait(timeout: .now() + 30)
            guard case .string(let id)? = context.params.first, case .string(let list)? = context.params.last else {
                throw MeteorError(error: "invalid", reason: "todos.move(id, listId)")
            }
            return .number(Double(try context.collection("todos").update(id, ["$set": ["listId": .string(list)]])))
        }
        server.perform {
            let lists = server.collection("lists")
            let todos = server.collection("todos")
            try! lists.insert(["name": "Home"], id: "home")
            try! lists.insert(["name": "Work"], id: "work")
            try! todos.insert(["listId": "home", "text": "milk"], id: "t1")
            try! todos.insert(["listId": "home", "text": "bread"], id: "t2")
            try! todos.insert(["listId": "work", "text": "report"], id: "t3")
        }
    }

    override func tearDown() async throws {
        try await server.stop()
    }

    func testAStubsMoveShowsAtOnceAndTheResultEndsEqualToTheServer() async throws {
        let client = DDPClient(url: server.url)
        client.connect()
        defer { client.close() }
        try await client.waitUntilConnected()
        client.defineStub("todos.move") { context in
            guard case .string(let id)? = context.params[0], case .string(let list)? = context.params[1] else {
                return nil
            }
            return .number(Double(try context.collection("todos").update(id, ["$set": ["listId": .string(list)]])))
        }
        let sub = client.subscribe("lists")
        try await withTimeout(10, "ready") { try await sub.ready() }
        let lists = client.collection("lists", as: TodoList.self)
        let todos = client.collection("todos", as: Todo.self)
        let live = try lists.toMany(todos, referencedBy: "listId").observe(
            [:], FindOptions(sort: ["name": 1]), relatedOptions: FindOptions(sort: ["text": 1]))
        defer { live.stop() }
        let snapshots = SharedIterator(live.snapshots.makeAsyncIterator())
        let first = try await withTimeout(10, "the first snapshot") { try await snapshots.next() }
        XCTAssertEqual(first?.values.map { $0.related.map(\.text) }, [["bread", "milk"], ["report"]])

        let call = Task { try await client.call("todos.move", params: ["t1", "work"]) }
        // The server holds the call: what follows is the stub's write alone.
        let moved = try await withTimeout(10, "the stub's move") { try await snapshots.next() }
        XCTAssertEqual(moved?.values.map { $0.related.map(\.text) }, [["bread"], ["milk", "report"]])
        XCTAssertEqual(moved?.diff.updated, [0, 1])
        XCTAssertTrue(moved?.diff.inserted.isEmpty == true && moved?.diff.removed.isEmpty == true)
        gate.signal()
        let changed = try await withTimeout(10, "the server's answer") { try await call.value }
        XCTAssertEqual(changed, 1)

        // The server's own write: a todo added to Home, published to the client.
        server.perform { _ = try! server.collection("todos").insert(["listId": "home", "text": "eggs"], id: "t4") }
        while let snapshot = try await withTimeout(10, "the server's insert", { try await snapshots.next() }) {
            if snapshot.values.first?.related.count == 2 { break }
        }
        let result = try lists.toMany(todos, referencedBy: "listId").find(
            [:], FindOptions(sort: ["name": 1]), relatedOptions: FindOptions(sort: ["text": 1]))
        let serverTodos: [(list: String, text: String)] = server.perform {
            server.collection("todos").find().map {
                ($0.fields["listId"]?.stringValue ?? "", $0.fields["text"]?.stringValue ?? "")
            }
        }
        let expected = ["home", "work"].map { list in serverTodos.filter { $0.list == list }.map(\.text).sorted() }
        XCTAssertEqual(result.map { $0.related.map(\.text) }, expected, "the cache equals the server")
        XCTAssertEqual(expected, [["bread", "eggs"], ["milk", "report"]])
    }
}

/// One async iterator used from successive tasks, one at a time (each `withTimeout` body runs in a task of its own).
private final class SharedIterator<Base: AsyncIteratorProtocol>: @unchecked Sendable {
    // @unchecked because the test calls `next()` from one task at a time, each after the previous one ended.
    private var base: Base

    init(_ base: Base) { self.base = base }

    func next() async throws -> Base.Element? { try await base.next() }
}
