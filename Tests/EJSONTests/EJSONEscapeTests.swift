import EJSON
import XCTest

/// `{"$escape": {…}}` as Meteor's `EJSON.fromJSONValue` reads it: the inner object's keys literally, each of its
/// values converted as any value is, so an escape inside an escape is itself an escape (once).
final class EJSONEscapeTests: XCTestCase {
    /// Found by FuzzEJSONParse: three escapes around a regular expression's look-alike lost one level when parsed,
    /// and the value no longer round-tripped.
    func testAnEscapeInsideAnEscapeIsReadAsMeteorReadsIt() throws {
        let text = #"{"$escape":{"$escape":{"$escape":{"$regexp":"x","$flags":"y"}}}}"#
        let value = try EJSON.parse(text)
        XCTAssertEqual(value, .object(["$escape": .object(["$regexp": "x", "$flags": "y"])]))
        XCTAssertEqual(EJSON.stringify(value), text)
        XCTAssertTrue(EJSON.equals(try EJSON.parse(EJSON.stringify(value)), value))
    }

    func testAnEscapedObjectsValuesAreConvertedAtEveryDepth() throws {
        // The body's `$escape` value is a value of the body: `{"$date":5}` in it is a date.
        XCTAssertEqual(
            try EJSON.parse(#"{"$escape":{"$escape":{"$date":5}}}"#),
            .object(["$escape": .date(millisecondsSince1970: 5)]))
        // … and an escape there is an escape: its body stays plain.
        XCTAssertEqual(
            try EJSON.parse(#"{"$escape":{"$escape":{"$escape":{"$date":5}}}}"#),
            .object(["$escape": .object(["$date": 5])]))
        XCTAssertEqual(
            try EJSON.parse(#"{"a":[{"$escape":{"b":{"$escape":{"$InfNaN":1}},"c":{"$InfNaN":-1}}}]}"#),
            .object(["a": [.object(["b": .object(["$InfNaN": 1]), "c": .number(-.infinity)])]]))
    }

    func testAnObjectWithAnEscapeKeyAndOthersConvertsTheKeysValue() throws {
        XCTAssertEqual(
            try EJSON.parse(#"{"$escape":{"$date":5},"x":1}"#),
            .object(["$escape": .date(millisecondsSince1970: 5), "x": 1]))
        XCTAssertEqual(
            try EJSON.parse(#"{"x":1,"$escape":{"$escape":{"$date":5}}}"#),
            .object(["x": 1, "$escape": .object(["$date": 5])]))
        XCTAssertEqual(
            try EJSON.parse(#"{"$escape":{"$date":5},"$escape":2}"#), .object(["$escape": 2]),
            "the last duplicate counts")
    }

    /// Every value these escapes make serialises and parses back to itself.
    func testNestedEscapesRoundTrip() throws {
        let looksLikeTypes: [EJSONValue] = [
            .object(["$date": 5]), .object(["$escape": 1]), .object(["$regexp": "a", "$flags": "g"]),
            .object(["$type": "x", "$value": 1]), .object(["$binary": "abc"]), .object(["$InfNaN": 1])
        ]
        for inner in looksLikeTypes {
            var value = inner
            for depth in 1...4 {
                value = .object(["$escape": value])
                let text = EJSON.stringify(value)
                XCTAssertEqual(try EJSON.parse(text), value, "\(depth) level(s): \(text)")
            }
        }
    }

    func testAnInvalidTypeInsideAnEscapeIsStillAnError() {
        XCTAssertThrowsError(try EJSON.parse(#"{"$escape":{"a":{"$date":"soon"}}}"#)) { error in
            guard case .invalidEJSONValue? = (error as? EJSONError)?.kind else { return XCTFail("\(error)") }
        }
    }
}
