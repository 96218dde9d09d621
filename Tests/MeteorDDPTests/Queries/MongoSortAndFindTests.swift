import EJSON
import XCTest

@testable import MeteorDDP

/// Sort specifiers, skip and limit as minimongo has them, and the collection API that takes selectors.
final class MongoSortAndFindTests: XCTestCase {
    private func documents(_ rows: [(String, EJSONObject)]) -> [Document] {
        rows.map { Document(id: $0.0, fields: $0.1) }
    }

    func testSortSpecifiersInEveryForm() throws {
        XCTAssertEqual(
            try MongoSort(["a": 1, "b.c": -1]).keys,
            [.init(path: "a", ascending: true), .init(path: "b.c", ascending: false)])
        XCTAssertEqual(
            try MongoSort([["a", "desc"], "b", ["c", "asc"]]).keys,
            [.init(path: "a", ascending: false), .init(path: "b", ascending: true), .init(path: "c", ascending: true)])
        XCTAssertThrowsError(try MongoSort(["": 1])) {
            XCTAssertEqual($0 as? QueryError, QueryError("sort keys must be non-empty"))
        }
        XCTAssertThrowsError(try MongoSort(["$natural": 1])) {
            XCTAssertEqual($0 as? QueryError, QueryError("unsupported sort key: $natural"))
        }
        XCTAssertThrowsError(try MongoSort("a")) {
            XCTAssertEqual($0 as? QueryError, QueryError(#"Bad sort specification: "a""#))
        }
    }

    func testMultipleKeysThroughOneArrayTakeTheSameElement() throws {
        // minimongo's min key: (1, 5) from the first element, not (1, 0) from two.
        let all = documents([("x", ["a": [["k": 1, "v": 5], ["k": 2, "v": 0]]]), ("y", ["a": [["k": 1, "v": 3]]])])
        let query = try Query([:], FindOptions(sort: ["a.k": 1, "a.v": 1]))
        XCTAssertEqual(query.evaluate(all).map(\.id), ["y", "x"])
    }

    func testNestedAndNumericSortPaths() throws {
        let all = documents([
            ("p", ["a": ["b": 2]]), ("q", ["a": ["b": 1]]), ("r", ["a": [["b": 3], ["b": 0]]]), ("s", [:])
        ])
        XCTAssertEqual(try Query([:], FindOptions(sort: ["a.b": 1])).evaluate(all).map(\.id), ["s", "r", "q", "p"])
        XCTAssertEqual(try Query([:], FindOptions(sort: ["a.b": -1])).evaluate(all).map(\.id), ["r", "p", "q", "s"])
        let indexed = documents([("i", ["a": [5, 1]]), ("j", ["a": [2, 9]])])
        XCTAssertEqual(
            try Query([:], FindOptions(sort: ["a.1": 1])).evaluate(indexed).map(\.id), ["i", "j"],
            "a.1 is the second element")
    }

    func testSkipAndLimitWindowTheSortedResult() throws {
        let all = documents((0..<10).map { ("d\($0)", ["n": .number(Double($0))]) })
        XCTAssertEqual(
            try Query(["n": ["$gte": 2]], FindOptions(sort: ["n": -1], skip: 2, limit: 3)).evaluate(all).map(\.id),
            ["d7", "d6", "d5"])
        XCTAssertEqual(try Query([:], FindOptions(skip: 20)).evaluate(all), [])
    }

    func testLimitZeroMeansNoLimitNegativeWindowsAreJavaScriptsSliceAndHugeOnesDoNotTrap() throws {
        let all = documents((0..<5).map { ("d\($0)", ["n": .number(Double($0))]) })
        XCTAssertEqual(try Query([:], FindOptions(limit: 0)).evaluate(all).count, 5, "limit 0: no limit, as in Meteor")
        XCTAssertEqual(
            try Query([:], FindOptions(sort: ["n": 1], skip: 1, limit: .max)).evaluate(all).map(\.id),
            ["d1", "d2", "d3", "d4"])
        // Negative bounds are JavaScript's slice, as in minimongo: `skip: -1` is the last document,
        // `limit: -2` all but the last two.
        var query = Query(sort: [.ascending("n")])
        query.skip = -1
        XCTAssertEqual(query.evaluate(all).map(\.id), ["d4"])
        query.limit = -3
        XCTAssertEqual(query.evaluate(all).count, 0)
        XCTAssertEqual(
            try Query([:], FindOptions(sort: ["n": 1], limit: -2)).evaluate(all).map(\.id), ["d0", "d1", "d2"])
        XCTAssertEqual(try Query([:], FindOptions(sort: ["n": 1], skip: -2, limit: 1)).evaluate(all).map(\.id), ["d3"])
        XCTAssertEqual(try Query([:], FindOptions(sort: ["n": 1], skip: -1, limit: 3)).evaluate(all).map(\.id), [])
        XCTAssertEqual(try Query([:], FindOptions(skip: .min, limit: .min)).evaluate(all).count, 0)
    }

    func testCollectionsTakeSelectors() throws {
        let database = Database()
        database.apply(
            [("t1", "L1", false, 3.0), ("t2", "L1", true, 2.0), ("t3", "L1", false, 1.0), ("t4", "L2", false, 4.0)].map
            { id, list, checked, createdAt in
                .added(
                    DocumentKey(collectionName: "todos", documentID: id),
                    ["listId": .string(list), "checked": .bool(checked), "createdAt": .number(createdAt)])
            })
        let todos = database.collection("todos")
        let open = try todos.find(["listId": "L1", "checked": ["$ne": true]], FindOptions(sort: ["createdAt": 1]))
        XCTAssertEqual(open.map(\.id), ["t3", "t1"])
        XCTAssertEqual(try todos.findOne(["listId": "L1"], FindOptions(sort: ["createdAt": -1]))?.id, "t1")
        XCTAssertEqual(try todos.findOne("t4")?.id, "t4")
        XCTAssertNil(try todos.findOne(["listId": "nowhere"]))
        XCTAssertEqual(try todos.count(["checked": false]), 3)
        XCTAssertThrowsError(try todos.find(["createdAt": ["$bogus": 1]])) {
            XCTAssertEqual($0 as? QueryError, QueryError("Unrecognized operator: $bogus"))
        }
    }

    func testALiveQueryWithASelectorSkipAndLimitFollowsChanges() async throws {
        let database = Database()
        database.apply(
            (0..<6).map { n in
                .added(
                    DocumentKey(collectionName: "c", documentID: "d\(n)"),
                    ["n": .number(Double(n)), "even": .bool(n % 2 == 0)])
            })
        let live = try database.collection("c").observe(["even": true], FindOptions(sort: ["n": 1], skip: 1, limit: 1))
        var snapshots = live.snapshots.makeAsyncIterator()
        let first = await snapshots.next()
        XCTAssertEqual(first?.documents.map(\.id), ["d2"])
        database.apply(.changed(DocumentKey(collectionName: "c", documentID: "d0"), ["even": false], cleared: []))
        let second = await snapshots.next()
        XCTAssertEqual(second?.documents.map(\.id), ["d4"], "d0 no longer matches: d2 is first, d4 second")
        live.stop()
    }
}

/// mongo-decimal's Decimal is a number to minimongo (`_type` 1): sorted and compared by value with numbers;
/// ObjectIDs sort by their hex digits, after every number, string and object.
final class DecimalAndObjectIDQueryTests: XCTestCase {
    func testDecimalsSortByValueAmongNumbers() throws {
        let all = [
            Document(id: "a", fields: ["p": .decimal(Decimal(string: "10.5")!)]),
            Document(id: "b", fields: ["p": 2]),
            Document(id: "c", fields: ["p": .decimal(Decimal(string: "2.25")!)]),
            Document(id: "d", fields: ["p": "text"]),
            Document(id: "e", fields: ["p": .objectID(ObjectID("000000000000000000000001")!)])
        ]
        XCTAssertEqual(try Query([:], FindOptions(sort: ["p": 1])).evaluate(all).map(\.id), ["b", "c", "a", "d", "e"])
        XCTAssertEqual(try Query(["p": ["$gt": 2]], FindOptions(sort: ["p": 1])).evaluate(all).map(\.id), ["c", "a"])
        XCTAssertEqual(
            try Query(["p": ["$lt": .decimal(Decimal(string: "2.5")!)]], FindOptions(sort: ["p": 1])).evaluate(all).map(
                \.id), ["b", "c"])
        XCTAssertEqual(try Query(["p": .decimal(Decimal(string: "2.250")!)]).evaluate(all).map(\.id), ["c"])
    }
}
