import EJSON
import XCTest

@testable import MeteorDDP

/// `fields` projections as minimongo has them.
final class MongoProjectionTests: XCTestCase {
    private let document: EJSONObject = [
        "_id": "x", "a": 1, "b": ["c": 2, "d": 3], "e": [["f": 1, "g": 2], ["f": 3], 7], "secret": "s"
    ]

    private func project(_ fields: EJSONValue) throws -> EJSONObject {
        try MongoProjection(fields).apply(document)
    }

    func testInclusionKeepsListedFieldsAndTheID() throws {
        XCTAssertEqual(EJSONValue.object(try project(["a": 1])), EJSONValue.object(["a": 1, "_id": "x"]))
        XCTAssertEqual(EJSONValue.object(try project(["b.c": 1])), EJSONValue.object(["b": ["c": 2], "_id": "x"]))
        XCTAssertEqual(
            EJSONValue.object(try project(["e.f": true])),
            EJSONValue.object(["e": [["f": 1], ["f": 3], [:]], "_id": "x"]),
            "into every element; a scalar element becomes {} as in minimongo")
        XCTAssertEqual(EJSONValue.object(try project(["a": 1, "_id": 0])), EJSONValue.object(["a": 1]))
        XCTAssertEqual(EJSONValue.object(try project(["_id": 1])), EJSONValue.object(["_id": "x"]))
    }

    func testExclusionDropsListedFields() throws {
        XCTAssertEqual(
            EJSONValue.object(try project(["secret": 0])),
            EJSONValue.object(["_id": "x", "a": 1, "b": ["c": 2, "d": 3], "e": [["f": 1, "g": 2], ["f": 3], 7]]))
        XCTAssertEqual(try project(["b.d": false, "e.g": 0])["b"], ["c": 2])
        XCTAssertEqual(try project(["e.g": 0])["e"], [["f": 1], ["f": 3], 7])
        XCTAssertNil(try project(["_id": 0])["_id"])
    }

    func testInvalidProjectionsGiveMinimongosReasons() {
        let cases: [(EJSONValue, String)] = [
            (["a": 1, "b": 0], "You cannot currently mix including and excluding fields."),
            (["a": 2], "Projection values should be one of 1, 0, true, or false"),
            (["a": ["$slice": 1]], "Minimongo doesn't support operators in projections yet."),
            (["a.$": 1], "Minimongo doesn't support $ operator in projections yet."),
            (
                ["a": 1, "a.b": 1],
                "both a.b and a found in fields option, "
                    + "using both of them may trigger unexpected behavior. Did you mean to use only one of them?"
            ),
            ([1], "fields option must be an object")
        ]
        for (fields, message) in cases {
            XCTAssertThrowsError(try MongoProjection(fields), "\(fields)") {
                XCTAssertEqual(($0 as? QueryError)?.message, message)
            }
        }
    }

    func testALiveQueryWithAProjectionIgnoresChangesToFieldsItDrops() throws {
        let database = Database()
        let key = DocumentKey(collectionName: "c", documentID: "p")
        database.apply(.added(key, ["name": "Ada", "score": 1]))
        let live = try database.collection("c").observe([:], FindOptions(fields: ["name": 1]))
        let handlerQueue = DispatchQueue(label: "projection test")
        let seen = Locked<[LiveQuerySnapshot]>([])
        let token = live.onChange(on: handlerQueue) { snapshot in seen.mutate { $0.append(snapshot) } }
        database.waitUntilDelivered()
        handlerQueue.sync {}
        XCTAssertEqual(seen.value.map { $0.documents.map { EJSONValue.object($0.fields) } }, [[["name": "Ada"]]])
        database.apply(.changed(key, ["score": 2], cleared: []))
        database.waitUntilDelivered()
        handlerQueue.sync {}
        XCTAssertEqual(seen.value.count, 1, "a change to a field the projection drops posts nothing")
        database.apply(.changed(key, ["name": "Lovelace"], cleared: []))
        database.waitUntilDelivered()
        handlerQueue.sync {}
        XCTAssertEqual(seen.value.last?.documents.map { EJSONValue.object($0.fields) }, [["name": "Lovelace"]])
        XCTAssertEqual(seen.value.last?.diff.updated, [0])
        token.cancel()
        live.stop()
    }
}
