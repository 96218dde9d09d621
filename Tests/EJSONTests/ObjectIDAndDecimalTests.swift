import EJSON
import Foundation
import XCTest

/// mongo-id's ObjectID and mongo-decimal's Decimal, as every Meteor app has them.
final class ObjectIDAndDecimalTests: XCTestCase {
    func testAnObjectIDIs24HexDigitsKeptInLowercaseAsMeteorsConstructorDoes() throws {
        let id = try XCTUnwrap(ObjectID("5F1D7A3C9E1B2A0012345678"))
        XCTAssertEqual(id.hexString, "5f1d7a3c9e1b2a0012345678")
        XCTAssertEqual(id.description, #"ObjectID("5f1d7a3c9e1b2a0012345678")"#)
        XCTAssertEqual(id.timestamp, 0x5f1d_7a3c)
        XCTAssertNil(ObjectID("5f1d7a3c9e1b2a001234567"), "23 digits")
        XCTAssertNil(ObjectID("5f1d7a3c9e1b2a001234567g"), "not hex")
        XCTAssertEqual(EJSON.stringify(id.ejsonValue), #"{"$type":"oid","$value":"5f1d7a3c9e1b2a0012345678"}"#)
        XCTAssertEqual(try EJSON.parse(#"{"$type":"oid","$value":"5F1D7A3C9E1B2A0012345678"}"#).objectIDValue, id)
    }

    func testANewObjectIDIs24RandomHexDigits() {
        let ids = (0..<100).map { _ in ObjectID() }
        XCTAssertTrue(ids.allSatisfy { ObjectID($0.hexString) == $0 })
        XCTAssertEqual(Set(ids).count, 100)
    }

    func testObjectIDsOrderByTheirHexDigits() throws {
        let a = try XCTUnwrap(ObjectID("000000000000000000000001"))
        let b = try XCTUnwrap(ObjectID("00000000000000000000000a"))
        XCTAssertLessThan(a, b)
    }

    func testCodableWritesTheEJSONFormWithEJSONCodersAndTheHexStringWithOthers() throws {
        struct Thing: Codable, Equatable {
            var _id: ObjectID
            var owner: ObjectID
            var price: Decimal
        }
        let thing = Thing(
            _id: try XCTUnwrap(ObjectID("5f1d7a3c9e1b2a0012345678")), owner: ObjectID(),
            price: Decimal(string: "19.99")!)
        let value = try EJSONEncoder().encode(thing)
        XCTAssertEqual(value["_id"], .custom(type: "oid", value: "5f1d7a3c9e1b2a0012345678"))
        XCTAssertEqual(value["price"], .custom(type: "Decimal", value: "19.99"))
        XCTAssertEqual(try EJSONDecoder().decode(Thing.self, from: value), thing)
        // A document's `_id` as the cache keeps it (the hex digits), and a plain number for a Decimal.
        var cached = try XCTUnwrap(value.objectValue)
        cached["_id"] = "5f1d7a3c9e1b2a0012345678"
        cached["price"] = 2.5
        let decoded = try EJSONDecoder().decode(Thing.self, from: .object(cached))
        XCTAssertEqual(decoded._id, thing._id)
        XCTAssertEqual(decoded.price, Decimal(2.5))
        let json = try JSONEncoder().encode(["id": thing._id])
        XCTAssertEqual(String(decoding: json, as: UTF8.self), #"{"id":"5f1d7a3c9e1b2a0012345678"}"#)
    }

    func testDecimalsAreEqualByValue() throws {
        let a = try EJSON.parse(#"{"$type":"Decimal","$value":"1.5"}"#)
        let b = try EJSON.parse(#"{"$type":"Decimal","$value":"1.50"}"#)
        XCTAssertEqual(a, b)
        XCTAssertEqual(Set([a, b]).count, 1)
        XCTAssertTrue(EJSON.equals(a, b, keyOrderSensitive: true))
        XCTAssertEqual(a.decimalValue, Decimal(string: "1.5"))
        XCTAssertEqual(EJSON.stringify(b), #"{"$type":"Decimal","$value":"1.50"}"#, "written back as read")
    }

    func testACacheIDNamesOneIDAndReadsBackAsIt() {
        let ids: [EJSONValue] = [
            "abc", "", "-abc", "~5", "{x", "5f1d7a3c9e1b2a0012345678", ObjectID("5f1d7a3c9e1b2a0012345678")!.ejsonValue,
            5, true
        ]
        let keys = ids.map(MongoID.documentID)
        XCTAssertEqual(
            keys,
            ["abc", "", "--abc", "-~5", "{x", "-5f1d7a3c9e1b2a0012345678", "5f1d7a3c9e1b2a0012345678", "~5", "~true"])
        for (id, key) in zip(ids, keys) {
            XCTAssertEqual(MongoID.parse(key), id, key)
            XCTAssertEqual(
                MongoID.documentID(fromWire: MongoID.stringify(id)), key, "the wire form names the same document")
        }
    }
}
