import EJSON
import Foundation
import XCTest

/// Every case of Tests/EJSONTests/Fixtures/ejson.json, produced by Meteor's own `ejson` package.
final class EJSONVectorTests: XCTestCase {
    nonisolated(unsafe) private static let root: [String: Any] = {
        let url = Bundle.module.url(forResource: "ejson", withExtension: "json", subdirectory: "Fixtures")!
        return try! JSONSerialization.jsonObject(with: Data(contentsOf: url)) as! [String: Any]
    }()

    override class func setUp() {
        EJSONTypeRegistry.shared.register("harness.Point")
        EJSONTypeRegistry.shared.register("harness.Money")
    }

    private func cases(_ section: String) -> [[String: Any]] {
        Self.root[section] as? [[String: Any]] ?? []
    }

    func testStringifyAndCanonicalMatchMeteorForEveryValue() throws {
        let cases = cases("stringify")
        XCTAssertGreaterThan(cases.count, 20)
        for testCase in cases {
            let name = testCase["name"] as? String ?? "?"
            let expected = try XCTUnwrap(testCase["stringify"] as? String)
            let canonical = try XCTUnwrap(testCase["canonical"] as? String)
            // Build the value by parsing Meteor's own output: parse ∘ stringify must be the identity on it.
            let value = try EJSON.parse(expected)
            XCTAssertEqual(EJSON.stringify(value), expected, name)
            XCTAssertEqual(EJSON.stringify(value, canonical: true), canonical, "canonical: \(name)")
            if testCase["roundTripEquals"] as? Bool == true {
                XCTAssertTrue(EJSON.equals(try EJSON.parse(EJSON.stringify(value)), value), "round trip: \(name)")
            }
        }
    }

    func testParseMatchesMeteorIncludingItsErrors() throws {
        let cases = cases("parse")
        XCTAssertGreaterThan(cases.count, 10)
        for testCase in cases {
            let input = try XCTUnwrap(testCase["input"] as? String)
            if let error = testCase["error"] as? String {
                // Meteor refuses unregistered custom types; so does the parser with `refusesUnregisteredTypes`.
                XCTAssertThrowsError(try EJSON.parse(input, options: .init(refusesUnregisteredTypes: true)), input) {
                    thrown in
                    XCTAssertTrue(String(describing: thrown).hasPrefix(error), "\(thrown) for \(input)")
                }
                continue
            }
            let value = try EJSON.parse(input)
            if case .custom = value {
                // A custom type is re-serialised by its own toJSONValue (the harness's Point writes y before x);
                // EJSONValue keeps the payload as it arrived, which is the same value.
                XCTAssertTrue(
                    EJSON.equals(try EJSON.parse(try XCTUnwrap(testCase["restringified"] as? String)), value), input)
            } else {
                XCTAssertEqual(EJSON.stringify(value), testCase["restringified"] as? String, input)
            }
            try assertShape(value, testCase["parsed"], input)
        }
    }

    private func assertShape(
        _ value: EJSONValue, _ shape: Any?, _ input: String, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let shape = try XCTUnwrap(shape as? [String: Any])
        switch shape["type"] as? String {
        case "Date":
            XCTAssertEqual(
                value, .date(millisecondsSince1970: try XCTUnwrap(shape["ms"] as? Double)), input, file: file,
                line: line)
        case "Uint8Array":
            XCTAssertEqual(
                value.binaryValue.map(Array.init), try XCTUnwrap(shape["bytes"] as? [UInt8]), input, file: file,
                line: line)
        case "number":
            switch shape["value"] {
            case let text as String:
                XCTAssertEqual(
                    value.doubleValue, text == "Infinity" ? .infinity : -.infinity, input, file: file, line: line)
            case let number as Double: XCTAssertEqual(value.doubleValue, number, input, file: file, line: line)
            default: XCTFail("unknown number shape", file: file, line: line)
            }
        case "object":
            XCTAssertEqual(
                value.objectValue.map { Array($0.keys) }, shape["keys"] as? [String], input, file: file, line: line)
        case "custom":
            guard case .custom(let type, _) = value else {
                return XCTFail("not custom: \(input)", file: file, line: line)
            }
            XCTAssertEqual(type, shape["typeName"] as? String, file: file, line: line)
        case "array":
            XCTAssertNotNil(value.arrayValue, input, file: file, line: line)
        default:
            XCTFail("unknown shape \(shape)", file: file, line: line)
        }
    }

    func testEqualsMatchesMeteor() throws {
        let cases = cases("equals")
        XCTAssertGreaterThan(cases.count, 10)
        for testCase in cases {
            let a = try EJSON.parse(try XCTUnwrap(testCase["a"] as? String))
            let b = try EJSON.parse(try XCTUnwrap(testCase["b"] as? String))
            let keyOrderSensitive = testCase["keyOrderSensitive"] as? Bool ?? false
            XCTAssertEqual(
                EJSON.equals(a, b, keyOrderSensitive: keyOrderSensitive), testCase["equals"] as? Bool,
                testCase["name"] as? String ?? "")
        }
    }

    func testKeyOrderSensitiveEqualityTellsOrdersApart() throws {
        let a = try EJSON.parse(#"{"a":1,"b":2}"#)
        let b = try EJSON.parse(#"{"b":2,"a":1}"#)
        XCTAssertTrue(EJSON.equals(a, b))
        XCTAssertFalse(EJSON.equals(a, b, keyOrderSensitive: true))
    }

    func testIndentedOutputMatchesMeteor() throws {
        for testCase in cases("indent") {
            let options = try XCTUnwrap(testCase["options"] as? [String: Any])
            let expected = try XCTUnwrap(testCase["output"] as? String)
            let indent: String
            switch options["indent"] {
            case let text as String: indent = text
            case let width as Int where !(options["indent"] is Bool): indent = String(repeating: " ", count: width)
            default: indent = "  "
            }
            let canonical = options["canonical"] as? Bool ?? false
            let value = try EJSON.parse(expected)
            XCTAssertEqual(EJSON.stringify(value, canonical: canonical, indent: indent), expected)
        }
    }

    func testMongoIDsStringifyAndParseAsMeteorDoes() throws {
        let section = try XCTUnwrap(Self.root["mongoIdStringify"] as? [String: Any])
        for testCase in try XCTUnwrap(section["cases"] as? [[String: Any]]) {
            let expected = try XCTUnwrap(testCase["idStringify"] as? String)
            switch testCase["input"] {
            case let text as String where text == "undefined":
                XCTAssertEqual(MongoID.parse(expected), nil)
            case let text as String:
                XCTAssertEqual(MongoID.stringify(.string(text)), expected)
                XCTAssertEqual(MongoID.parse(expected), .string(text))
            case let flag as Bool where testCase["input"] is Bool:
                XCTAssertEqual(MongoID.stringify(.bool(flag)), expected)
                XCTAssertEqual(MongoID.parse(expected), .bool(flag))
            case let number as Double:
                XCTAssertEqual(MongoID.stringify(.number(number)), expected)
                XCTAssertEqual(MongoID.parse(expected), .number(number))
            default:
                XCTFail("unexpected case \(testCase)")
            }
        }
    }
}
