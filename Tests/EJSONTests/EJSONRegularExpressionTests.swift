import EJSON
import XCTest

/// Meteor's built-in RegExp type (packages/ejson): `{"$regexp": source, "$flags": flags}`, flags normalised, and
/// plain objects that look like one escaped.
final class EJSONRegularExpressionTests: XCTestCase {
    func testARegularExpressionRoundTripsWithItsFlagsNormalised() throws {
        let value = try EJSON.parse(#"{"r":{"$regexp":"^a.c$","$flags":"mgimxsq"}}"#)
        XCTAssertEqual(
            value["r"], .regularExpression(pattern: "^a.c$", flags: "gim"), "only g i m u y, each once, in JS order")
        XCTAssertEqual(EJSON.stringify(value), #"{"r":{"$regexp":"^a.c$","$flags":"gim"}}"#)
    }

    func testFlagsAreCutAtFiftyCharacters() throws {
        let flags = String(repeating: "x", count: 50) + "i"
        let value = try EJSON.parse(#"{"$regexp":"a","$flags":"\#(flags)"}"#)
        XCTAssertEqual(value, .regularExpression(pattern: "a", flags: ""))
    }

    func testAPlainObjectThatLooksLikeARegularExpressionIsEscaped() throws {
        let lookalike: EJSONValue = .object(["$regexp": "a", "$flags": "g"])
        let text = EJSON.stringify(lookalike)
        XCTAssertEqual(text, #"{"$escape":{"$regexp":"a","$flags":"g"}}"#)
        XCTAssertEqual(try EJSON.parse(text), lookalike)
    }

    func testObjectsWithOtherKeysStayPlain() throws {
        XCTAssertEqual(try EJSON.parse(#"{"$regexp":"a"}"#), .object(["$regexp": "a"]))
        XCTAssertEqual(
            try EJSON.parse(#"{"$regexp":"a","$flags":"g","x":1}"#), .object(["$regexp": "a", "$flags": "g", "x": 1]))
    }

    func testNonStringPartsAreAnInvalidValue() {
        XCTAssertThrowsError(try EJSON.parse(#"{"$regexp":1,"$flags":""}"#)) { error in
            guard case .invalidEJSONValue? = (error as? EJSONError)?.kind else { return XCTFail("\(error)") }
        }
    }

    func testEqualityComparesPatternAndNormalisedFlags() {
        XCTAssertEqual(
            EJSONValue.regularExpression(pattern: "a", flags: "ig"), .regularExpression(pattern: "a", flags: "gi"))
        XCTAssertNotEqual(
            EJSONValue.regularExpression(pattern: "a", flags: "i"), .regularExpression(pattern: "a", flags: ""))
        XCTAssertNotEqual(EJSONValue.regularExpression(pattern: "a", flags: ""), .string("a"))
    }
}
