import EJSON
import Foundation
import TestSupport
import XCTest

@testable import MeteorDDP

/// What minimongo answers since Meteor 3.0.4 (3.3.2, 3.4.1, 3.5, 3.6), and the 3.0.4 corners we answered differently,
/// each as minimongo answers it (its code and tests read in Meteor's `packages/minimongo`).
final class MinimongoNewerReleasesTests: XCTestCase {
    private func database(_ documents: [(EJSONValue, EJSONObject)]) -> Database {
        let database = Database()
        for (id, fields) in documents {
            database.apply(.added(DocumentKey(collectionName: "c", documentID: MongoID.documentID(id)), fields))
        }
        return database
    }

    // MARK: - 3.4.1: keys with dots

    /// A literal `a.b` key is data no path reaches: a selector, projection or sort on `a.b` means the path.
    func testALiteralDottedKeyIsNotThePath() throws {
        let c = database([("1", ["a.b": 1]), ("2", ["a": ["b": 1]]), ("3", ["x": ["a.b": 1]])]).collection("c")
        XCTAssertEqual(try c.find(["a.b": 1]).map(\.id), ["2"])
        XCTAssertEqual(try c.find(["a.b": ["$exists": false]]).map(\.id), ["1", "3"])
        XCTAssertEqual(try c.find(["x": ["a.b": 1]]).map(\.id), ["3"], "a whole value compares its keys literally")
        XCTAssertEqual(try c.findOne("1", FindOptions(fields: ["a.b": 1]))?.fields, [:])
        XCTAssertEqual(try c.findOne("1", FindOptions(fields: ["a.b": 0]))?.fields, ["a.b": 1])
        XCTAssertEqual(try c.findOne("3", FindOptions(fields: ["x": 1]))?.fields, ["x": ["a.b": 1]])
        XCTAssertEqual(try c.find([:], FindOptions(sort: ["a.b": -1])).first?.id, "2", "the others sort as missing")
    }

    /// Before Meteor 3.4.1 (meteor#13552) a stub refused such a document: `Key api_key.created must not contain '.'`;
    /// a key 3.4.1 still refuses is refused by `insert`, as minimongo's `prepareInsert` does.
    func testAStubInsertsAndSetsKeysWithDots() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let keys = harness.client.collection("keys")
        let id = try keys.insert(["_id": "k1", "api_key.created": 1, "meta": ["v.1": true]]) { _ in }
        XCTAssertEqual(harness.document("keys", id)?.fields, ["api_key.created": 1, "meta": ["v.1": true]])
        let task = Task { try await keys.update("k1", ["$set": ["meta": ["v.2": false]]]) }
        await harness.transport.waitUntilSent(count: 2) { if case .method = $0 { true } else { false } }
        XCTAssertEqual(harness.document("keys", id)?["meta"], ["v.2": false])
        task.cancel()
        for (key, message) in [("$x", "must not start with '$'"), ("a..b", "must not contain consecutive dots")] {
            XCTAssertThrowsError(try keys.insert(["n": [key: 1]]) { _ in }) { error in
                XCTAssertEqual((error as? QueryError)?.message, "Key \(key) \(message)")
            }
            let refused = Locked<String?>(nil)
            harness.client.defineStub("insertBadKey") { context in
                do { try context.collection("keys").insert(["_id": "bad", key: 1]) } catch {
                    refused.mutate { $0 = "\(error)" }
                }
                return nil
            }
            _ = try harness.client.call("insertBadKey") { _ in }
            harness.settle()
            XCTAssertEqual(refused.value, "Key \(key) \(message)", "a stub's insert refuses it too")
            XCTAssertNil(harness.document("keys", "bad"))
        }
    }

    /// A difference (README): Meteor's store turns a `changed` into `{$set: {"a.b": 2}}`, the path; the server's
    /// document has the field `a.b`, and so does the cache.
    func testAChangedFieldWithADotSetsThatField() {
        let harness = ClientHarness()
        harness.establishConnection()
        harness.receive(.added(collection: "keys", id: "k", fields: ["a.b": 1, "a": ["c": 1]]))
        harness.receive(.changed(collection: "keys", id: "k", fields: ["a.b": 2], cleared: []))
        harness.flushData()
        XCTAssertEqual(harness.document("keys", "k")?.fields, ["a.b": 2, "a": ["c": 1]])
        harness.receive(.changed(collection: "keys", id: "k", fields: [:], cleared: ["a.b"]))
        harness.flushData()
        XCTAssertEqual(harness.document("keys", "k")?.fields, ["a": ["c": 1]])
    }

    /// Meteor 3.5.1 (PR #14536): stopping a subscription twice unhooked other listeners of its collection (on the
    /// server). Here: the second stop does nothing, the other handle keeps the subscription, a live query goes on.
    func testStoppingASubscriptionTwiceLeavesLiveQueriesAndOtherHandlesAlone() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let live = try harness.client.collection("c").observe([:])
        defer { live.stop() }
        let first = harness.client.subscribe("items", notInUseTimeout: .zero)
        let second = harness.client.subscribe("items", notInUseTimeout: .zero)
        harness.receive(.added(collection: "c", id: "1", fields: [:]))
        harness.receive(.ready(subscriptionIDs: [first.id]))
        first.stop()
        first.stop()
        harness.settle()
        XCTAssertFalse(harness.sent.contains(.unsub(id: first.id)), "the second handle still holds it")
        harness.receive(.added(collection: "c", id: "2", fields: [:]))
        harness.flushData()
        harness.client.database.waitUntilDelivered()
        XCTAssertEqual(live.documents.map(\.id), ["1", "2"])
        second.stop()
        harness.settle()
        XCTAssertTrue(harness.sent.contains(.unsub(id: first.id)))
    }

    // MARK: - 3.3.2: an upsert's inserted id

    func testAStubsUpsertReturnsTheInsertedID() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let results = Locked<[UpsertResult]>([])
        harness.client.defineStub("tally") { context in
            let c = context.collection("c")
            let first = try c.upsert(["name": "n"], ["$inc": ["count": 1]])
            let second = try c.upsert(["name": "n"], ["$inc": ["count": 1]])
            let byID = try c.upsert(["_id": "given"], ["$set": ["v": 1]])
            results.mutate { $0 = [first, second, byID] }
            return nil
        }
        _ = try harness.client.call("tally") { _ in }
        harness.settle()
        let inserted = try XCTUnwrap(results.value.first?.insertedID)
        XCTAssertEqual(
            results.value,
            [
                UpsertResult(numberAffected: 1, insertedID: inserted), UpsertResult(numberAffected: 1),
                UpsertResult(numberAffected: 1, insertedID: "given")
            ])
        XCTAssertEqual(harness.document("c", inserted)?.fields, ["name": "n", "count": 2])
    }

    func testACollectionsUpsertAsksForTheObjectAndReadsTheInsertedID() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let c = harness.client.collection("c")
        let task = Task { try await c.upsert("new", ["$set": ["v": 1]]) }
        await harness.transport.waitUntilSent(count: 1) { if case .method = $0 { true } else { false } }
        XCTAssertEqual(harness.document("c", "new")?.fields, ["v": 1], "the stub inserted it at once")
        XCTAssertEqual(
            harness.sent.last,
            .method(
                id: "1", method: "/c/update",
                params: [["_id": "new"], ["$set": ["v": 1]], ["upsert": true, "_returnObject": true]], randomSeed: nil))
        harness.receive(.added(collection: "c", id: "new", fields: ["v": 1]))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.receive(.result(id: "1", result: ["numberAffected": 1, "insertedId": "new"], error: nil))
        let result = try await value(of: task)
        XCTAssertEqual(result, UpsertResult(numberAffected: 1, insertedID: "new"))
        XCTAssertEqual(UpsertResult(.number(1)), UpsertResult(numberAffected: 1), "a server answering a count")
        // The built-in stub answers as minimongo's `update` with `_returnObject` does.
        let stubValue = try harness.client.call(
            "/c/update", params: ["n2", ["$set": ["v": 2]], ["upsert": true, "_returnObject": true]],
            options: MethodOptions(returnStubValue: true)
        ) { _ in }
        XCTAssertEqual(stubValue, ["numberAffected": 1, "insertedId": "n2"])
    }

    // MARK: - 3.0.4 corners

    /// minimongo compares each `$in` member with `EJSON.equals`: an ObjectID member finds the ObjectID.
    func testInWithADateAnObjectIDAndBinaryFindsEach() throws {
        let oid = ObjectID("5f1d7a3c9e1b2a0012345678")!.ejsonValue
        let date = EJSONValue.date(millisecondsSince1970: 1_000)
        let bytes = EJSONValue.binary(Data([1, 2, 3]))
        let c = database([
            ("d", ["f": date]), ("o", ["f": oid]), ("b", ["f": bytes]), ("x", ["f": "5f1d7a3c9e1b2a0012345678"])
        ])
        .collection("c")
        XCTAssertEqual(try c.find(["f": ["$in": [date, oid, bytes]]]).map(\.id), ["d", "o", "b"])
        XCTAssertEqual(try c.find(["f": ["$in": [oid]]]).map(\.id), ["o"])
        // As ids: the selector names no ids only (a date is none), so every document is matched.
        let byID = database([(oid, [:]), (date, [:]), ("s", [:])])
        XCTAssertEqual(try byID.collection("c").find(["_id": ["$in": [date, oid, bytes]]]).map(\.idValue), [oid, date])
        XCTAssertEqual(
            try LocalWrites.remove(selector: ["_id": ["$in": [date, oid, bytes]]], from: "c", database: byID), 2)
    }

    /// A date or binary member of `$in` is compared with `EJSON.equals`, as `$eq` compares it: a date (no keys of its
    /// own) equals `{}`, binary equals the object of its bytes keyed by index (minimongo's `equalityElementMatcher`).
    func testInComparesADateOrBinaryMemberAsEqualityDoes() throws {
        let date = EJSONValue.date(millisecondsSince1970: 1_000)
        let bytes = EJSONValue.binary(Data([1]))
        let c = database([("e", ["f": [:]]), ("k", ["f": ["0": 1]]), ("n", ["f": 1])]).collection("c")
        XCTAssertEqual(try c.find(["f": ["$eq": date]]).map(\.id), ["e"])
        XCTAssertEqual(try c.find(["f": ["$in": [date]]]).map(\.id), ["e"])
        XCTAssertEqual(try c.find(["f": ["$eq": bytes]]).map(\.id), ["k"])
        XCTAssertEqual(try c.find(["f": ["$in": [bytes, 2]]]).map(\.id), ["k"])
        XCTAssertEqual(try c.find(["f": ["$nin": [date, bytes]]]).map(\.id), ["n"])
    }

    /// `find({_id: 0})` takes the id fast path and finds document 0: a live query of it shows the same.
    func testALiveQueryOfAFalsyIDShowsWhatFindShows() throws {
        let database = database([(0, ["v": 1]), ("x", ["v": 2])])
        let live = try database.collection("c").observe(["_id": 0])
        defer { live.stop() }
        database.waitUntilDelivered()
        XCTAssertEqual(live.documents.map(\.idValue), [0])
        XCTAssertEqual(try database.collection("c").find(["_id": 0]).map(\.idValue), [0])
        database.apply(
            .changed(DocumentKey(collectionName: "c", documentID: MongoID.documentID(0)), ["v": 3], cleared: []))
        database.waitUntilDelivered()
        XCTAssertEqual(live.documents.first?["v"], 3)
        // The fast path's window too: a skip other than 0 leaves nothing, a limit is not looked at.
        for options in [FindOptions(skip: 1), FindOptions(skip: -1), FindOptions(limit: -1), FindOptions(limit: 1)] {
            let windowed = try database.collection("c").observe(["_id": 0], options)
            database.waitUntilDelivered()
            XCTAssertEqual(
                windowed.documents.map(\.id), try database.collection("c").find(["_id": 0], options).map(\.id),
                "skip \(options.skip), limit \(String(describing: options.limit))")
            windowed.stop()
        }
    }

    /// minimongo's `$v` modifier does nothing (Mongo ≥ 3.6 sends it; meteor#9623).
    func testTheVersionModifierIsIgnored() throws {
        XCTAssertEqual(try MongoModifier(["$v": 1]).apply(to: ["_id": "x", "a": 1]), ["_id": "x", "a": 1])
        XCTAssertEqual(
            try MongoModifier(["$v": 2, "$set": ["b": 2]]).apply(to: ["_id": "x", "a": 1]), ["_id": "x", "a": 1, "b": 2]
        )
    }

    func testMessagesUseMinimongosWords() {
        XCTAssertThrowsError(try MongoModifier(["$set": ["a": 1], "b": 2])) { error in
            XCTAssertEqual((error as? QueryError)?.message, #"Inconsistent operator: {"$set":{"a":1},"b":2}"#)
        }
        XCTAssertThrowsError(try MongoModifier(["$unset": ["_id": 1]]).apply(to: ["_id": "abc"])) { error in
            XCTAssertEqual(
                (error as? QueryError)?.message,
                #"After applying the update to the document {_id: "abc", ...}, the (immutable) field '_id' was "#
                    + #"found to have been altered to _id: "undefined""#)
        }
    }

    /// minimongo's `isOperatorObject` counts `diff` (the oplog's v2 update format) as an operator, in a selector's
    /// value and in a modifier alike; as a top-level selector key it is a field.
    func testDiffIsAnOperatorKeyAsInMinimongo() throws {
        func message(_ work: () throws -> Void) -> String? {
            do {
                try work()
                return nil
            } catch {
                return (error as? QueryError)?.message ?? "\(error)"
            }
        }
        XCTAssertEqual(message { _ = try MongoSelector(["meta": ["diff": 1]]) }, "Unrecognized operator: diff")
        XCTAssertEqual(
            message { _ = try MongoSelector(["meta": ["diff": 1, "x": 2]]) },
            #"Inconsistent operator: {"diff":1,"x":2}"#)
        XCTAssertEqual(message { _ = try MongoModifier(["diff": 1]) }, "Invalid modifier specified diff")
        XCTAssertEqual(
            message { _ = try MongoModifier(["title": "x", "diff": 1]) },
            #"Inconsistent operator: {"title":"x","diff":1}"#)
        let c = database([("1", ["diff": 1]), ("2", ["diff": 2])]).collection("c")
        XCTAssertEqual(try c.find(["diff": 1]).map(\.id), ["1"])
    }

    /// Meteor 3.3.x (PR #13965): removing `{_id: {$in: [a, b]}}` removes both (3.0.4 removed the first only).
    func testRemovingByAListOfIDsRemovesEveryOne() throws {
        let database = database([("a", [:]), ("b", [:]), ("c", [:])])
        XCTAssertEqual(
            try LocalWrites.remove(selector: ["_id": ["$in": ["a", "b", "z"]]], from: "c", database: database), 2)
        XCTAssertEqual(database.collection("c").documents.map(\.id), ["c"])
    }
}
