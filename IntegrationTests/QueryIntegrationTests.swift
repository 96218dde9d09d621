import DDPTestServer
import EJSON
import Foundation
import MeteorDDP
import XCTest

/// Selectors and modifiers end to end: a selector-filtered publication follows the server's changes, the client's
/// modifiers run the same in its stubs and on the server, and the server refuses what Meteor's refuses.
final class QueryIntegrationTests: XCTestCase {
    private var server: DDPTestServer!

    override func setUp() async throws {
        server = DDPTestServer()
        try await server.start()
        server.publish("openTodos") { context in
            [
                try Cursor(
                    collection: "todos", selector: ["listId": context.params.first ?? .null, "checked": ["$ne": true]])
            ]
        }
        server.perform {
            let todos = server.collection("todos")
            try! todos.insert(["listId": "L1", "text": "milk", "checked": false, "tags": ["shop"]], id: "t1")
            try! todos.insert(["listId": "L1", "text": "bread", "checked": true], id: "t2")
            try! todos.insert(["listId": "L2", "text": "tea"], id: "t3")
        }
    }

    override func tearDown() async throws {
        try await server.stop()
    }

    private func connectedClient() async throws -> DDPClient {
        let client = DDPClient(url: server.url)
        client.connect()
        try await client.waitUntilConnected()
        return client
    }

    func testASelectorPublicationFollowsChangesAndModifiersAgreeWithTheServer() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let todos = client.collection("todos")
        let sub = client.subscribe("openTodos", params: ["L1"])
        try await withTimeout(10, "ready") { try await sub.ready() }
        XCTAssertEqual(try todos.find([:], FindOptions(sort: ["text": 1])).map(\.id), ["t1"])

        // The server unchecks t2: it enters the publication.
        server.perform {
            _ = try! server.collection("todos").update(selector: "t2", ["$set": ["checked": false]]) { "unused" }
        }
        try await withTimeout(10, "t2 published") {
            for await snapshot in todos.observe(Query(sort: [.ascending("text")])).snapshots
            where snapshot.documents.count == 2 { break }
        }

        // A modifier from the client: the stub and the server make the same document.
        let changed = try await todos.update(
            "t1",
            ["$addToSet": ["tags": ["$each": ["shop", "dairy"]]], "$inc": ["count": 2], "$currentDate": ["at": true]])
        XCTAssertEqual(changed, 1)
        let serverCopy = server.perform { server.collection("todos").document("t1") }
        let clientCopy = todos.document(id: "t1")
        XCTAssertEqual(clientCopy?["tags"], ["shop", "dairy"])
        XCTAssertEqual(clientCopy?["tags"], serverCopy?["tags"])
        XCTAssertEqual(clientCopy?["count"], 2)
        XCTAssertEqual(
            clientCopy?["at"], serverCopy?["at"], "after the server's updated, the cache holds the server's date")

        // Checking t1 takes it out of the publication.
        _ = try await todos.update("t1", ["$set": ["checked": true]])
        XCTAssertNil(todos.document(id: "t1"))
    }

    func testTheServerRefusesSelectorsOtherThanAnIDFromClients() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        do {
            _ = try await client.call("/todos/update", params: [["listId": "L1"], ["$set": ["checked": true]], [:]])
            XCTFail("the server accepted a selector")
        } catch let error as MeteorError {
            XCTAssertEqual(error.error, 403)
        }
        XCTAssertEqual(server.perform { server.collection("todos").document("t1")?["checked"] }, false)
    }

    func testAnUpsertByIDInsertsOnTheServerWithTheSameFields() async throws {
        let client = try await connectedClient()
        defer { client.close() }
        let todos = client.collection("todos")
        let changed = try await todos.update(
            "t9", ["$set": ["text": "new"], "$setOnInsert": ["listId": "L1"]], options: UpdateOptions(upsert: true))
        XCTAssertEqual(changed, 1)
        let stored = server.perform { server.collection("todos").document("t9") }
        XCTAssertEqual(stored.map { EJSONValue.object($0) }, ["text": "new", "listId": "L1"])
    }
}
