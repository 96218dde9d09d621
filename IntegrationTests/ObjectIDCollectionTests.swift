import DDPTestServer
import EJSON
import Foundation
import MeteorDDP
import XCTest

/// Collections keyed by ObjectID (Meteor's `idGeneration: 'MONGO'`) end to end against DDPTestServer: the
/// server's ObjectIDs reach the cache as ObjectIDs, reads and typed models take them, writes by ObjectID reach the
/// server's document, and a stub's ObjectID (from the call's random stream) equals the server's.
final class ObjectIDCollectionTests: XCTestCase {
    private var server: DDPTestServer!
    private let lamp = ObjectID("5f1d7a3c9e1b2a0012345678")!
    private let shelf = ObjectID("5f1d7a3c9e1b2a00123456ff")!

    struct Thing: Codable, Sendable, Equatable {
        var _id: ObjectID
        var name: String
        var shelf: ObjectID?
    }

    override func setUp() async throws {
        server = DDPTestServer()
        try await server.start()
        server.publish("things") { _ in [Cursor(collection: "things")] }
        server.method("things.add") { context in
            let things = context.collection("things")
            let id = ObjectID(context.randomHexString(forSequence: "/collection/things", digits: 24))!
            try things.insert(["name": context.params.first ?? .null], id: id.hexString)
            return id.ejsonValue
        }
        server.perform {
            let things = server.collection("things", idGeneration: .objectID)
            try! things.insert(["name": "lamp", "shelf": shelf.ejsonValue], id: MongoID.stringify(lamp.ejsonValue))
        }
    }

    override func tearDown() async throws {
        try await server.stop()
    }

    private func serverDocument(_ id: ObjectID) -> EJSONObject? {
        server.perform { server.collection("things").document(id.hexString) }
    }

    func testAnObjectIDCollectionReadsWritesAndMakesTheServersIDs() async throws {
        let client = DDPClient(url: server.url)
        client.connect()
        defer { client.close() }
        try await client.waitUntilConnected()
        let things = client.collection("things", idGeneration: .objectID)
        let sub = client.subscribe("things")
        try await withTimeout(10, "ready") { try await sub.ready() }

        // Reading: the _id and the reference are ObjectIDs, as in the Meteor web app.
        let document = try XCTUnwrap(things.document(id: lamp))
        XCTAssertEqual(document.idValue, lamp.ejsonValue)
        XCTAssertEqual(document.ejsonValue["_id"], lamp.ejsonValue)
        XCTAssertEqual(try things.findOne(["_id": lamp.ejsonValue])?.id, lamp.hexString)
        XCTAssertEqual(try things.find(["shelf": shelf.ejsonValue]).count, 1)
        XCTAssertEqual(try things.find(["_id": .string(lamp.hexString)]).count, 0, "a string is not an ObjectID")
        let typed = client.collection("things", as: Thing.self)
        XCTAssertEqual(try typed.findOne(), Thing(_id: lamp, name: "lamp", shelf: shelf))

        // Writing by ObjectID: untrusted code may (it is an id), and the server's document changes.
        let lit = try await things.update(lamp, ["$set": ["lit": true]])
        XCTAssertEqual(lit, 1)
        XCTAssertEqual(serverDocument(lamp)?["lit"], true)
        let renamed = try await typed.update(lamp, ["$set": ["name": "desk lamp"]])
        XCTAssertEqual(renamed, 1)
        XCTAssertEqual(try typed.findOne(["_id": lamp.ejsonValue])?.name, "desk lamp")

        // An app's insert: an ObjectID, the same on both sides.
        let inserted = try await things.insert(["name": "chair"])
        let chair = try XCTUnwrap(ObjectID(inserted), "an ObjectID's 24 hex digits")
        XCTAssertEqual(serverDocument(chair)?["name"], "chair")
        XCTAssertEqual(things.document(id: chair)?.idValue, chair.ejsonValue)

        // A typed insert with its own ObjectID.
        let table = ObjectID()
        _ = try await typed.insert(Thing(_id: table, name: "table", shelf: nil))
        XCTAssertEqual(serverDocument(table)?["name"], "table")

        // A stub's insert: its ObjectID comes from the call's random stream, as the server's does.
        client.defineStub("things.add") { context in
            try context.collection("things").insert(["name": context.params.first ?? .null]).flatMap {
                ObjectID($0)?.ejsonValue
            }
        }
        let answered = expectation(description: "things.add answered")
        let answer = Locked<Result<EJSONValue?, any Error>?>(nil)
        let stubValue = try client.call("things.add", params: ["rug"], options: MethodOptions(returnStubValue: true)) {
            result in
            answer.withLock { $0 = result }
            answered.fulfill()
        }
        await fulfillment(of: [answered], timeout: 10)
        let rug = try XCTUnwrap(try answer.value?.get()?.objectIDValue)
        XCTAssertEqual(stubValue, rug.ejsonValue, "the stub made the server's id")
        XCTAssertEqual(
            try things.find(["name": "rug"]).map(\.id), [rug.hexString], "one document: the stub's became the server's")

        // Removing by ObjectID.
        let removed = try await things.remove(chair)
        XCTAssertEqual(removed, 1)
        XCTAssertNil(serverDocument(chair))
        XCTAssertNil(things.document(id: chair))
    }
}
