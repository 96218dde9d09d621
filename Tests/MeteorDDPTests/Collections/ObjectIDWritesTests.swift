import EJSON
import XCTest

@testable import MeteorDDP

/// Documents whose `_id` is an ObjectID (Meteor's `idGeneration: 'MONGO'`): read back as ObjectIDs, written by
/// ObjectID (an id, so untrusted code may), and made by stubs from the call's random stream as Meteor's
/// `_makeNewID` makes them.
final class ObjectIDWritesTests: XCTestCase {
    private let lamp = ObjectID("5f1d7a3c9e1b2a0012345678")!

    private func connected() -> ClientHarness {
        let harness = ClientHarness()
        harness.establishConnection()
        // The server sends an ObjectID _id as its 24 hex digits (MongoID.idStringify), a 24-hex string id with "-".
        harness.receive(.added(collection: "things", id: lamp.hexString, fields: ["name": "lamp"]))
        harness.receive(.added(collection: "things", id: "-" + lamp.hexString, fields: ["name": "a string id"]))
        harness.flushData()
        return harness
    }

    private func sentMethod(_ harness: ClientHarness, _ name: String) -> [EJSONValue]? {
        for message in harness.sent.reversed() {
            if case .method(_, let method, let params, _) = message, method == name { return params }
        }
        return nil
    }

    func testAnObjectIDReadsBackAsAnObjectIDAndAStringIDAsAString() throws {
        let harness = connected()
        let things = harness.client.collection("things")
        let byObjectID = try XCTUnwrap(things.document(id: lamp.hexString))
        XCTAssertEqual(byObjectID.ejsonValue["_id"], lamp.ejsonValue)
        XCTAssertEqual(byObjectID.value(at: "_id"), lamp.ejsonValue)
        let byString = try XCTUnwrap(things.document(id: "-" + lamp.hexString))
        XCTAssertEqual(byString.ejsonValue["_id"], .string(lamp.hexString))
        XCTAssertEqual(try things.find(["_id": lamp.ejsonValue]).map(\.id), [lamp.hexString])
        XCTAssertEqual(try things.find(["_id": .string(lamp.hexString)]).map(\.id), ["-" + lamp.hexString])
    }

    func testWritesByObjectIDAreWritesByIDAndReachTheServerAsObjectIDs() async throws {
        let harness = connected()
        let things = harness.client.collection("things")
        let lamp = lamp
        let update = Task { try await things.update(["_id": lamp.ejsonValue], ["$set": ["lit": true]]) }
        let transport = harness.transport
        try await withTimeout(5, "the update sent") {
            await transport.waitUntilSent(count: 1) { if case .method = $0 { true } else { false } }
        }
        XCTAssertEqual(
            sentMethod(harness, "/things/update")?.first, ["_id": lamp.ejsonValue], "not refused as a selector")
        XCTAssertEqual(things.document(id: lamp.hexString)?["lit"], true, "the stub found the document")
        update.cancel()

        // By the id the cache gives (Document.id): the server gets the ObjectID, not its hex digits as a string.
        let second = Task { try await things.update(lamp.hexString, ["$set": ["on": 1]]) }
        try await withTimeout(5, "the second update sent") {
            await transport.waitUntilSent(count: 2) { if case .method = $0 { true } else { false } }
        }
        XCTAssertEqual(sentMethod(harness, "/things/update")?.first, ["_id": lamp.ejsonValue])
        second.cancel()
    }

    func testAStubUpsertWithAnObjectIDSelectorInsertsThatID() throws {
        let harness = connected()
        let client = harness.client
        _ = client.collection("things")
        let shelf = ObjectID("5f1d7a3c9e1b2a00123456ff")!
        client.defineStub("things.ensureShelf") { context in
            .number(
                Double(
                    try context.collection("things").update(
                        ["_id": shelf.ejsonValue], ["$set": ["name": "shelf"]], options: UpdateOptions(upsert: true))))
        }
        _ = try client.call("things.ensureShelf") { _ in }
        XCTAssertEqual(client.collection("things").document(id: shelf.hexString)?.ejsonValue["_id"], shelf.ejsonValue)
    }

    func testAnUpdateWithoutMultiOnAnInListTakesTheListsOrder() throws {
        let harness = connected()
        let client = harness.client
        for id in ["a", "b", "c"] { harness.receive(.added(collection: "letters", id: id, fields: ["n": 0])) }
        harness.flushData()
        _ = client.collection("letters")
        client.defineStub("letters.bumpOne") { context in
            .number(Double(try context.collection("letters").update(["_id": ["$in": ["c", "a"]]], ["$inc": ["n": 1]])))
        }
        _ = try client.call("letters.bumpOne") { _ in }
        XCTAssertEqual(
            try client.collection("letters").find(["n": 1]).map(\.id), ["c"], "minimongo visits the $in's ids in order")
    }

    func testAStubInsertIntoAnObjectIDCollectionMakesTheServersObjectID() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let client = harness.client
        _ = client.collection("things", idGeneration: .objectID)
        client.defineStub("things.add") { context in
            try context.collection("things").insert(["name": "rug"]).map { .string($0) }
        }
        let value = try client.call("things.add", options: MethodOptions(returnStubValue: true)) { _ in }
        guard case .method(_, "things.add", _, let seed?)? = harness.sent.last else {
            return XCTFail("no call with a seed sent")
        }
        let expected = RandomStream(seed: seed).hexString(forSequence: "/collection/things", digits: 24)
        XCTAssertEqual(value, .string(expected), "new Mongo.ObjectID(stream.hexString(24))")
        XCTAssertEqual(client.collection("things").document(id: expected)?.idValue, ObjectID(expected)!.ejsonValue)
    }
}
