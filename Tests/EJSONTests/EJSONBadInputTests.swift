import EJSON
import XCTest

/// Malformed input gives an `EJSONError` with the byte offset of the problem, never a crash.
final class EJSONBadInputTests: XCTestCase {
    private func assertError(
        _ input: String, _ kind: EJSONError.Kind, at offset: Int, file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try EJSON.parse(input), file: file, line: line) { error in
            XCTAssertEqual(error as? EJSONError, EJSONError(kind, at: offset), file: file, line: line)
        }
    }

    func testTruncatedInputReportsTheEnd() {
        assertError(#"{"a":"#, .unexpectedEndOfInput, at: 5)
        assertError(#"{"a":"bc"#, .unexpectedEndOfInput, at: 8)
        assertError("[1,2", .unexpectedEndOfInput, at: 4)
    }

    func testTrailingCharactersAndBadTokens() {
        assertError("{} x", .trailingCharacters, at: 3)
        assertError("[1,]", .unexpectedCharacter(UInt8(ascii: "]")), at: 3)
        assertError("nul", .unexpectedEndOfInput, at: 3)
        assertError("01", .trailingCharacters, at: 1)
        assertError("-", .unexpectedEndOfInput, at: 1)
        assertError("1.", .unexpectedEndOfInput, at: 2)
    }

    func testInvalidUTF8BytesAreRejected() {
        let bytes: [UInt8] = Array(#"{"a":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)
        XCTAssertThrowsError(try EJSON.parse(bytes: bytes)) { error in
            XCTAssertEqual((error as? EJSONError)?.kind, .invalidUTF8)
            XCTAssertEqual((error as? EJSONError)?.offset, 6)
        }
        XCTAssertEqual(try EJSON.parse(bytes: Array(#"{"a":"é"}"#.utf8)), ["a": "é"], "valid multi-byte UTF-8 is fine")
    }

    func testNumbersBeyondADoubleAreRejectedNotTurnedIntoInfinity() {
        assertError("1e400", .numberOutOfRange, at: 0)
        assertError("[-1e999]", .numberOutOfRange, at: 1)
        XCTAssertEqual(try EJSON.parse("1e308"), 1e308)
    }

    func testLoneSurrogateEscapesAreRejectedAndPairsAreJoined() {
        assertError(#""\ud800""#, .invalidEscape, at: 1)
        assertError(#""\udc00x""#, .invalidEscape, at: 1)
        XCTAssertEqual(try EJSON.parse(#""\ud83d\ude00""#), "😀")
    }

    func testNestingBeyondTheLimitIsRejected() {
        let deep =
            String(repeating: "[", count: EJSON.maximumNestingDepth + 1)
            + String(repeating: "]", count: EJSON.maximumNestingDepth + 1)
        XCTAssertThrowsError(try EJSON.parse(deep)) { error in
            XCTAssertEqual((error as? EJSONError)?.kind, .nestingTooDeep)
        }
        let allowed =
            String(repeating: "[", count: EJSON.maximumNestingDepth)
            + String(repeating: "]", count: EJSON.maximumNestingDepth)
        XCTAssertNoThrow(try EJSON.parse(allowed))
    }

    func testControlCharactersAndBadEscapesInStrings() {
        assertError("\"a\u{01}\"", .controlCharacterInString, at: 2)
        assertError(#""\x""#, .invalidEscape, at: 1)
    }

    func testMalformedEJSONPayloads() {
        XCTAssertThrowsError(try EJSON.parse(#"{"$binary":5}"#))
        XCTAssertThrowsError(try EJSON.parse(#"{"$date":"soon"}"#))
        XCTAssertThrowsError(try EJSON.parse(#"{"$binary":"a"}"#))
    }

    func testErrorsDescribeThemselvesWithTheOffset() {
        XCTAssertEqual(
            String(describing: EJSONError(.unexpectedEndOfInput, at: 5)), "unexpected end of input at byte 5")
    }
}
