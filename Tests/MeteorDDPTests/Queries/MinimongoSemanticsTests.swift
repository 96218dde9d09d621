import EJSON
import Foundation
import XCTest

@testable import MeteorDDP

/// The corners of minimongo's semantics that differed (issue 32, item 7), each as minimongo answers it (checked with
/// minimongo's own code under node), and the differences we keep on purpose, pinned.
final class MinimongoSemanticsTests: XCTestCase {
    private func matches(
        _ selector: EJSONValue, _ document: EJSONObject, file: StaticString = #filePath, line: UInt = #line
    ) -> Bool {
        do {
            return try MongoSelector(selector).matches(document)
        } catch {
            XCTFail("\(error)", file: file, line: line)
            return false
        }
    }

    func testADateARegularExpressionAndEmptyBinaryEqualAnEmptyObject() {
        let date = EJSONValue.date(millisecondsSince1970: 1_700_000_000_000)
        let regex = EJSONValue.regularExpression(pattern: "x", flags: "")
        for value in [date, regex, .binary(Data())] {
            XCTAssertTrue(matches(["a": [:]], ["a": value]), "\(value) has no keys of its own")
        }
        XCTAssertFalse(matches(["a": [:]], ["a": .binary(Data([1, 2]))]))
        XCTAssertFalse(matches(["a": [:]], ["a": ObjectID("5f1d7a3c9e1b2a0012345678")!.ejsonValue]))
        XCTAssertTrue(
            matches(["a": ["$eq": date]], ["a": regex]), "a date and a regular expression are equal to EJSON.equals")
        XCTAssertTrue(matches(["a": ["$eq": regex]], ["a": .regularExpression(pattern: "y", flags: "")]))
        XCTAssertFalse(matches(["a": regex], ["a": [:]]), "a regular expression as a value selector tests strings")
        XCTAssertTrue(
            matches(["a": ["0": 1, "1": 2]], ["a": .binary(Data([1, 2]))]), "binary data is an object keyed by index")
    }

    func testInfinityAndNaNMatchNoInequality() {
        let infinity = EJSONValue.number(.infinity)
        XCTAssertFalse(matches(["a": ["$gte": infinity]], ["a": infinity]), "Infinity - Infinity is NaN")
        XCTAssertFalse(matches(["a": ["$lte": .number(-.infinity)]], ["a": .number(-.infinity)]))
        XCTAssertTrue(matches(["a": ["$lt": infinity]], ["a": 5]))
        XCTAssertFalse(matches(["a": ["$gte": .number(.nan)]], ["a": .number(.nan)]))
        XCTAssertFalse(matches(["a": ["$lt": .number(.nan)]], ["a": 5]))
        XCTAssertFalse(matches(["a": ["$gt": 1]], ["a": .number(.nan)]))
        XCTAssertTrue(matches(["a": .number(.nan)], ["a": .number(.nan)]), "equality finds NaN equal to NaN")
        XCTAssertFalse(matches(["a": ["$ne": .number(.nan)]], ["a": .number(.nan)]))
    }

    func testAPathPartWithALeadingZeroReadsNothingFromAnArray() {
        XCTAssertFalse(matches(["a.01": 2], ["a": [1, 2]]), "minimongo reads array[\"01\"]: undefined")
        XCTAssertTrue(matches(["a.01": .null], ["a": [1, 2]]))
        XCTAssertTrue(matches(["a.1": 2], ["a": [1, 2]]))
        XCTAssertTrue(matches(["a.01": 5], ["a": ["01": 5]]), "on an object \"01\" is an ordinary key")
        XCTAssertTrue(matches(["a.01": 5], ["a": [["01": 5]]]))
    }

    func testRegularExpressionsReadAsJavaScriptReadsThem() {
        func test(_ pattern: String, _ text: String) -> Bool { test(pattern, "", text) }
        func test(_ pattern: String, _ flags: String, _ text: String) -> Bool {
            matches(["a": .regularExpression(pattern: pattern, flags: flags)], ["a": .string(text)])
        }
        XCTAssertFalse(test(#"^\w+$"#, "é"), "\\w is ASCII in JavaScript")
        XCTAssertTrue(test(#"^\W$"#, "é"))
        XCTAssertFalse(test(#"\d"#, "٣"), "\\d is ASCII")
        XCTAssertTrue(test(#"^[\w-]+$"#, "a-b_9"))
        XCTAssertFalse(test(#"^[\w]+$"#, "aé"))
        XCTAssertTrue(test(#"a\b"#, "aé"), "\\b on ASCII word characters: é is not one")
        XCTAssertTrue(test(#"\bé"#, "aé"))
        XCTAssertFalse(test(#"\bé"#, " é"))
        XCTAssertTrue(test(#"\s"#, "\u{FEFF}"), "JavaScript's \\s includes U+FEFF")
        XCTAssertTrue(test(#"\s"#, "\u{0B}"))
        XCTAssertFalse(test("a$", "a\n"), "$ is the end of the string without m")
        XCTAssertTrue(test("a$", "m", "a\nb"))
        XCTAssertFalse(test("[]", "x"), "[] matches nothing")
        XCTAssertTrue(test("^[^]$", "\n"), "[^] matches anything")
        XCTAssertTrue(test(#"[\b]"#, "\u{08}"), "\\b in a class is a backspace")
        XCTAssertTrue(test("[a[]", "["))
    }

    func testFalsyIDsTakeMinimongosIDFastPath() throws {
        let database = Database()
        for id: EJSONValue in [0, "", "x"] {
            database.apply(.added(DocumentKey(collectionName: "c", documentID: MongoID.documentID(id)), ["v": id]))
        }
        let collection = database.collection("c")
        XCTAssertEqual(try collection.find(["_id": 0]).map(\.idValue), [0])
        XCTAssertEqual(try collection.find(["_id": ""]).map(\.idValue), [""])
        XCTAssertEqual(try collection.find(0).map(\.idValue), [0])
        XCTAssertEqual(try collection.count(["_id": 0]), 1)
        XCTAssertEqual(
            try collection.find(["_id": 0, "v": 0]).count, 0, "not the fast path: a falsy _id matches nothing")
        XCTAssertEqual(try collection.find(["_id": "x"], FindOptions(skip: 1)).count, 0, "the fast path honours skip")
        XCTAssertEqual(try collection.find(["_id": .bool(false)]).count, 0)
    }

    func testBitwiseOperators() {
        // 54 is 0b110110: bits 1, 2, 4, 5.
        XCTAssertTrue(matches(["a": ["$bitsAllSet": [1, 5]]], ["a": 54]))
        XCTAssertFalse(matches(["a": ["$bitsAllSet": [0, 1]]], ["a": 54]))
        XCTAssertTrue(matches(["a": ["$bitsAnySet": 3]], ["a": 54]), "bit 1 of the mask 0b11")
        XCTAssertTrue(matches(["a": ["$bitsAllClear": .binary(Data([0b1001]))]], ["a": 54]))
        XCTAssertTrue(matches(["a": ["$bitsAnyClear": [0, 1]]], ["a": 54]))
        XCTAssertFalse(matches(["a": ["$bitsAllSet": 1]], ["a": 1.5]), "not an integer: no match")
        XCTAssertTrue(matches(["a": ["$bitsAllSet": [63]]], ["a": -1]), "a negative number's bits are sign-extended")
        XCTAssertTrue(matches(["a": ["$bitsAllSet": [1]]], ["a": [8, 2]]), "array elements each")
        XCTAssertThrowsError(try MongoSelector(["a": ["$bitsAllSet": -1]]))
        XCTAssertNoThrow(try MongoSelector(["a": ["$bitsAllSet": [8_388_607]]]))
        XCTAssertThrowsError(try MongoSelector(["a": ["$bitsAllSet": [8_388_608]]]), "a mask over 1 MiB is refused")
    }

    func testAnIncludingProjectionKeepsNullArrayElements() throws {
        let projected = try MongoProjection(["s.x": 1, "_id": 0]).apply(["s": [.null, ["x": 1, "y": 2], 5]])
        XCTAssertEqual(projected, ["s": [.null, ["x": 1], [:]]])
    }

    func testErrorsUseMinimongosWords() {
        func upsertError(_ selector: EJSONValue) -> String? {
            do {
                _ = try MongoSelector(selector).upsertDocument(applying: MongoModifier(["$set": ["x": 1]]))
                return nil
            } catch {
                return error.message
            }
        }
        XCTAssertEqual(upsertError(["a": ["b.c": 1]]), "The dotted field 'b.c' in 'a.b.c is not valid for storage.")
        XCTAssertEqual(
            upsertError(["a": ["b": ["$c": 1]]]), "The dollar ($) prefixed field  'a.b.$c is not valid for storage.")
        XCTAssertThrowsError(try MongoSelector(["a": ["$gt": 1, "b": 2]])) { error in
            XCTAssertEqual((error as? QueryError)?.message, #"Inconsistent operator: {"$gt":1,"b":2}"#)
        }
    }

    // MARK: - Differences we keep on purpose (README: "Where we differ from Meteor on purpose")

    func testParallelArraysAndRegularExpressionsSortInsteadOfThrowing() throws {
        let database = Database()
        database.apply(.added(DocumentKey(collectionName: "c", documentID: "p"), ["a": [1, 2], "b": [3, 4, 5]]))
        database.apply(.added(DocumentKey(collectionName: "c", documentID: "q"), ["a": [0], "b": [9, 8]]))
        database.apply(
            .added(
                DocumentKey(collectionName: "c", documentID: "r"),
                ["a": .regularExpression(pattern: "z", flags: ""), "b": 1]))
        database.apply(
            .added(
                DocumentKey(collectionName: "c", documentID: "s"),
                ["a": .regularExpression(pattern: "y", flags: ""), "b": 1]))
        // minimongo throws "cannot index parallel arrays" and "Sorting not supported on regular expression" when it
        // compares such documents; a live query cannot throw, so every query sorts them (per-key min/max, a
        // regular expression by its source).
        XCTAssertEqual(
            try database.collection("c").find([:], FindOptions(sort: ["a": 1, "b": 1])).map(\.id), ["q", "p", "s", "r"])
    }

    func testPullWithAnOperatorConditionRemovesTheMatchingScalarsAsMongoDoes() throws {
        // minimongo throws "Unrecognized logical operator: $gt"; MongoDB (the server) removes the elements, and a
        // stub that does the same shows what the server will.
        let modified = try MongoModifier(["$pull": ["a": ["$gt": 3]]]).apply(to: ["a": [1, 5, 2, 7]])
        XCTAssertEqual(modified["a"], [1, 2])
        let strings = try MongoModifier(["$pull": ["a": .regularExpression(pattern: "^x", flags: "")]]).apply(to: [
            "a": ["xa", 1, "b", ["x": 1]]
        ])
        XCTAssertEqual(strings["a"], [1, "b", ["x": 1]])
    }
}
