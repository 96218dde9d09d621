import EJSON
import XCTest

/// Numbers print as JavaScript's Number.prototype.toString prints them.
final class JSNumberFormattingTests: XCTestCase {
    func testNumbersPrintAsJavaScriptPrintsThem() {
        let cases: [(Double, String)] = [
            (0, "0"), (-0.0, "0"), (1, "1"), (-1, "-1"), (0.1, "0.1"), (1.5, "1.5"), (123.456, "123.456"),
            (1e20, "100000000000000000000"), (1e21, "1e+21"), (1.5e21, "1.5e+21"), (1e-6, "0.000001"), (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"), (5e-324, "5e-324"), (0.001, "0.001"), (100.5, "100.5"),
            (9_007_199_254_740_993, "9007199254740992"),
            (1.7976931348623157e308, "1.7976931348623157e+308"), (123_456_789_012_345_680_000, "123456789012345680000"),
            (0.000_012_34, "0.00001234"), (-2.5e-10, "-2.5e-10")
        ]
        for (value, expected) in cases {
            XCTAssertEqual(EJSON.stringify(.number(value)), expected, "\(value)")
        }
    }

    func testStringsEscapeOnlyWhatJSONStringifyEscapes() {
        XCTAssertEqual(EJSON.stringify("a/b"), #""a/b""#)
        XCTAssertEqual(EJSON.stringify("\u{08}\u{0C}\u{1F}"), #""\b\f\u001f""#)
        XCTAssertEqual(EJSON.stringify("漢字 😀"), "\"漢字 😀\"")
    }
}
