import EJSON
import XCTest

/// A custom type nobody registered is kept, not refused: its name and raw value, written back byte for byte; Meteor's
/// refusal is an option. `oid` and `Decimal` are registered in every process, as in every Meteor app.
final class UnregisteredTypeTests: XCTestCase {
    func testAnUnregisteredTypeIsKeptAndWrittenBackAsItWasRead() throws {
        let text = #"{"a":{"$type":"nobody.Registered","$value":{"z":[1,{"$date":5}],"a":"x"}},"b":2}"#
        let value = try EJSON.parse(text)
        XCTAssertEqual(
            value["a"], .custom(type: "nobody.Registered", value: ["z": [1, .date(millisecondsSince1970: 5)], "a": "x"])
        )
        XCTAssertEqual(EJSON.stringify(value), text)
    }

    func testRefusingUnregisteredTypesIsMeteorsError() {
        XCTAssertThrowsError(
            try EJSON.parse(
                #"{"$type":"nobody.Registered","$value":1}"#, options: .init(refusesUnregisteredTypes: true))
        ) {
            XCTAssertEqual(($0 as? EJSONError)?.kind, .unknownCustomType("nobody.Registered"))
        }
    }

    func testObjectIDAndDecimalAreRegistered() throws {
        XCTAssertTrue(EJSONTypeRegistry.shared.isRegistered("oid"))
        XCTAssertTrue(EJSONTypeRegistry.shared.isRegistered("Decimal"))
        let strict = EJSON.ParseOptions(refusesUnregisteredTypes: true)
        XCTAssertEqual(
            try EJSON.parse(#"{"$type":"oid","$value":"5f1d7a3c9e1b2a0012345678"}"#, options: strict),
            .custom(type: "oid", value: "5f1d7a3c9e1b2a0012345678"))
        XCTAssertEqual(
            try EJSON.parse(#"{"$type":"Decimal","$value":"1.50"}"#, options: strict),
            .custom(type: "Decimal", value: "1.50"))
    }

    func testParseJSONRecognisesNoEJSONType() throws {
        let value = try EJSON.parseJSON(#"{"d":{"$date":"not a number"},"t":{"$type":"x","$value":1}}"#)
        XCTAssertEqual(value["d"], .object(["$date": "not a number"]))
        XCTAssertEqual(value["t"], .object(["$type": "x", "$value": 1]))
    }
}
