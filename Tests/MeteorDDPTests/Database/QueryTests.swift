import EJSON
import XCTest

@testable import MeteorDDP

/// Query sorting follows minimongo's order of mixed types; ties are broken by id.
final class QueryTests: XCTestCase {
    private func documents(_ values: [(String, EJSONValue?)]) -> [Document] {
        values.map { id, value in Document(id: id, fields: value.map { ["v": $0] } ?? [:]) }
    }

    func testMixedTypesSortLikeMinimongo() {
        let all = documents([
            ("date", .date(millisecondsSince1970: 0)), ("bool", true), ("binary", .binary(Data([1]))),
            ("array", [[1]]), ("object", ["a": 1]), ("string", "a"), ("number", 1), ("null", .null), ("missing", nil)
        ])
        let ascending = Query(sort: [.ascending("v")]).evaluate(all).map(\.id)
        XCTAssertEqual(ascending, ["missing", "null", "number", "string", "object", "array", "binary", "bool", "date"])
        let descending = Query(sort: [.descending("v")]).evaluate(all).map(\.id)
        XCTAssertEqual(descending, Array(ascending.reversed()))
    }

    func testAnArraySortsByItsSmallestElementAscendingAndItsLargestDescending() {
        let all = documents([("a", [5, 1]), ("b", 3), ("c", [4]), ("d", []), ("e", [2, 9])])
        XCTAssertEqual(
            Query(sort: [.ascending("v")]).evaluate(all).map(\.id), ["d", "a", "e", "b", "c"],
            "[] has no element: it sorts as missing")
        XCTAssertEqual(Query(sort: [.descending("v")]).evaluate(all).map(\.id), ["e", "a", "c", "b", "d"])
    }

    func testValuesOfOneTypeSortByValueAndTiesByID() {
        let all = documents([("c", 2), ("a", 10), ("b", 2), ("d", -1)])
        XCTAssertEqual(Query(sort: [.ascending("v")]).evaluate(all).map(\.id), ["d", "b", "c", "a"])
        XCTAssertEqual(Query(sort: [.descending("v")], limit: 2).evaluate(all).map(\.id), ["a", "b"])
    }

    func testFieldEqualityMatchesDottedPathsAndTheID() {
        let all = [
            Document(id: "berlin", fields: ["location": ["city": "Berlin"]]),
            Document(id: "paris", fields: ["location": ["city": "Paris"]])
        ]
        XCTAssertEqual(Query.where("location.city", equals: "Paris").evaluate(all).map(\.id), ["paris"])
        XCTAssertEqual(Query.where("_id", equals: "berlin").evaluate(all).map(\.id), ["berlin"])
    }
}
