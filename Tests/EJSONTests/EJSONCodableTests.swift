import EJSON
import Foundation
import XCTest

final class EJSONCodableTests: XCTestCase {
    enum Color: String, Codable, Equatable { case red, blue }

    struct Location: Codable, Equatable {
        var city: String
        var lat: Double
    }

    struct Player: Codable, Equatable {
        var name: String
        var score: Int
        var rank: UInt8
        var active: Bool
        var joined: Date
        var avatar: Data
        var tags: [String]
        var location: Location
        var color: Color
        var nickname: String?
        var counts: [String: Int]
    }

    private let player = Player(
        name: "Ada", score: -3, rank: 7, active: true, joined: Date(timeIntervalSince1970: 1_700_000_000.123),
        avatar: Data([0, 1, 255]), tags: ["a", "b"], location: Location(city: "London", lat: 51.5), color: .blue,
        nickname: nil, counts: ["x": 1]
    )

    func testRoundTripsNestedValuesDatesAndBinary() throws {
        let value = try EJSONEncoder().encode(player)
        XCTAssertEqual(value["joined"], .date(millisecondsSince1970: 1_700_000_000_123))
        XCTAssertEqual(value["avatar"], .binary(Data([0, 1, 255])))
        XCTAssertEqual(try EJSONDecoder().decode(Player.self, from: value), player)
    }

    func testEncodedKeysFollowDeclarationOrderAndNilOptionalsAreOmitted() throws {
        let value = try EJSONEncoder().encode(player)
        XCTAssertEqual(
            value.objectValue.map { Array($0.keys) },
            ["name", "score", "rank", "active", "joined", "avatar", "tags", "location", "color", "counts"])
        XCTAssertTrue(
            EJSON.stringify(value).hasPrefix(
                #"{"name":"Ada","score":-3,"rank":7,"active":true,"joined":{"$date":1700000000123}"#))
    }

    func testOptionalsDecodeFromAbsentKeysAndNull() throws {
        var value = try EJSONEncoder().encode(player)
        XCTAssertNil(try EJSONDecoder().decode(Player.self, from: value).nickname)
        if case .object(var object) = value {
            object["nickname"] = .null
            value = .object(object)
        }
        XCTAssertNil(try EJSONDecoder().decode(Player.self, from: value).nickname)
    }

    func testAWrongTypeIsATypeMismatchWithItsCodingPath() throws {
        let value: EJSONValue = ["city": 5, "lat": 1]
        XCTAssertThrowsError(try EJSONDecoder().decode(Location.self, from: value)) { error in
            guard case DecodingError.typeMismatch(_, let context) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(context.codingPath.map(\.stringValue), ["city"])
        }
    }

    func testAMissingKeyIsKeyNotFound() {
        XCTAssertThrowsError(try EJSONDecoder().decode(Location.self, from: ["city": "x"])) { error in
            guard case DecodingError.keyNotFound(let key, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(key.stringValue, "lat")
        }
    }

    func testIntegersAreRangeCheckedExactly() {
        struct Small: Decodable { var n: UInt8 }
        struct Whole: Decodable { var n: Int }
        XCTAssertThrowsError(try EJSONDecoder().decode(Small.self, from: ["n": 300])) { error in
            guard case DecodingError.dataCorrupted(let context) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(context.codingPath.map(\.stringValue), ["n"])
        }
        XCTAssertThrowsError(try EJSONDecoder().decode(Whole.self, from: ["n": 1.5]))
        XCTAssertEqual(try EJSONDecoder().decode(Whole.self, from: ["n": 42]).n, 42)
    }

    func testIntegersBeyondJavaScriptPrecisionDoNotEncode() {
        struct Big: Encodable { var n: Int64 }
        XCTAssertThrowsError(try EJSONEncoder().encode(Big(n: Int64.max)))
    }

    func testArraysOfValuesAndEJSONValuesThemselves() throws {
        XCTAssertEqual(try EJSONEncoder().encode([1, 2, 3]), [1, 2, 3])
        XCTAssertEqual(try EJSONDecoder().decode([Int].self, from: [1, 2, 3]), [1, 2, 3])
        let raw: EJSONValue = ["any": ["thing": true]]
        XCTAssertEqual(try EJSONDecoder().decode(EJSONValue.self, from: raw), raw)
        XCTAssertEqual(try EJSONEncoder().encode(raw), raw)
    }
}
