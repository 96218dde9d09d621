import EJSON
import XCTest

@testable import MeteorDDP

/// Minimongo's result order: without a sort, documents come in the order they came into the cache (its `_docs` map
/// keeps insertion order); a sort is stable, so ties keep that order; `limit` and `skip` cut that order. An `update`
/// without `multi` changes the first match in it.
final class ArrivalOrderTests: XCTestCase {
    /// Ids whose hash order is (almost surely) not their arrival order nor their alphabetical order.
    private let ids = (0..<40).map { "d\(($0 * 7919) % 97)" }

    private func database(adding ids: [String], score: (Int) -> Int = { _ in 1 }) -> Database {
        let database = Database()
        for (index, id) in ids.enumerated() {
            database.apply(
                .added(DocumentKey(collectionName: "c", documentID: id), ["score": .number(Double(score(index)))]))
        }
        return database
    }

    func testUnsortedResultsLimitAndSkipFollowArrivalOrder() throws {
        let collection = database(adding: ids).collection("c")
        XCTAssertEqual(try collection.find().map(\.id), ids)
        XCTAssertEqual(try collection.find([:], FindOptions(limit: 3)).map(\.id), Array(ids.prefix(3)))
        XCTAssertEqual(try collection.find([:], FindOptions(skip: 5, limit: 2)).map(\.id), Array(ids[5..<7]))
        XCTAssertEqual(try collection.findOne()?.id, ids[0])
        XCTAssertEqual(
            try collection.find(["_id": ["$in": .array(ids.reversed().prefix(4).map { .string($0) })]]).map(\.id),
            Array(ids.suffix(4)), "an $in on _id lists in arrival order, not the $in's")
    }

    func testSortTiesKeepArrivalOrder() throws {
        // Scores 0, 1, 0, 1, ...: each score's documents must come in arrival order.
        let collection = database(adding: ids, score: { $0 % 2 }).collection("c")
        let expected =
            ids.enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
            + ids.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
        XCTAssertEqual(try collection.find([:], FindOptions(sort: ["score": -1])).map(\.id), expected)
        XCTAssertEqual(try collection.findOne([:], FindOptions(sort: ["score": 1]))?.id, ids[0])
    }

    func testAChangedDocumentKeepsItsPlaceAndARemovedOneComesBackLast() throws {
        let database = database(adding: ids)
        let collection = database.collection("c")
        database.apply(.changed(DocumentKey(collectionName: "c", documentID: ids[0]), ["score": 9], cleared: []))
        database.apply(.replaced(DocumentKey(collectionName: "c", documentID: ids[1]), ["other": true]))
        XCTAssertEqual(try collection.find().map(\.id), ids)
        database.apply(.removed(DocumentKey(collectionName: "c", documentID: ids[2])))
        database.apply(.added(DocumentKey(collectionName: "c", documentID: ids[2]), ["score": 1]))
        XCTAssertEqual(try collection.find().map(\.id), ids.filter { $0 != ids[2] } + [ids[2]])
    }

    func testAResetKeepsThePlaceOfDocumentsSentAgainAndPutsNewOnesLast() throws {
        let database = database(adding: ids)
        database.performUpdates {
            database.removeAllDocuments()
            for id in ids.reversed() where id != ids[3] {
                database.apply(.added(DocumentKey(collectionName: "c", documentID: id), ["score": 1]))
            }
            database.apply(.added(DocumentKey(collectionName: "c", documentID: "new"), ["score": 1]))
        }
        XCTAssertEqual(try database.collection("c").find().map(\.id), ids.filter { $0 != ids[3] } + ["new"])
    }

    func testALiveQueryWithoutSortListsInArrivalOrder() throws {
        let database = database(adding: Array(ids.prefix(20)))
        let live = try database.collection("c").observe([:], FindOptions(limit: 25))
        defer { live.stop() }
        database.waitUntilDelivered()
        XCTAssertEqual(live.documents.map(\.id), Array(ids.prefix(20)))
        database.apply(ids[20...].map { .added(DocumentKey(collectionName: "c", documentID: $0), ["score": 1]) })
        database.apply(.changed(DocumentKey(collectionName: "c", documentID: ids[0]), ["score": 2], cleared: []))
        database.waitUntilDelivered()
        XCTAssertEqual(live.documents.map(\.id), Array(ids.prefix(25)))
    }

    func testAnUpdateWithoutMultiChangesTheFirstMatchInArrivalOrder() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        for id in ids { harness.receive(.added(collection: "c", id: id, fields: ["group": "g"])) }
        harness.flushData()
        let client = harness.client
        client.defineStub("c.markOne") { context in
            .number(Double(try context.collection("c").update(["group": "g"], ["$set": ["marked": true]])))
        }
        _ = try client.call("c.markOne") { _ in }
        let marked = try client.collection("c").find(["marked": true]).map(\.id)
        XCTAssertEqual(marked, [ids[0]], "minimongo changes the first document in its order")
    }
}
