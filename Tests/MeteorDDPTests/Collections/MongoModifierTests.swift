import EJSON
import XCTest

@testable import MeteorDDP

final class MongoModifierTests: XCTestCase {
    private let player: EJSONObject = ["name": "Ada Lovelace", "score": 25, "color": "blue", "tags": ["a"]]

    func testSetAndUnsetChangeAndRemoveFields() throws {
        let modifier = try MongoModifier(["$set": ["score": 30], "$unset": ["color": ""]])
        XCTAssertEqual(EJSONValue.object(try modifier.apply(to: player)), ["name": "Ada Lovelace", "score": 30, "tags": ["a"]])
    }

    func testIncAddsToNumbersAndCreatesMissingFields() throws {
        let result = try MongoModifier(["$inc": ["score": 5, "visits": 1]]).apply(to: player)
        XCTAssertEqual(result["score"], 30)
        XCTAssertEqual(result["visits"], 1)
    }

    func testIncOnANonNumberIsAnError() {
        XCTAssertThrowsError(try MongoModifier(["$inc": ["name": 1]]).apply(to: player))
    }

    func testPushPullAndAddToSetWorkOnArrays() throws {
        var result = try MongoModifier(["$push": ["tags": "b"]]).apply(to: player)
        XCTAssertEqual(result["tags"], ["a", "b"])
        result = try MongoModifier(["$addToSet": ["tags": "a"]]).apply(to: result)
        XCTAssertEqual(result["tags"], ["a", "b"])
        result = try MongoModifier(["$addToSet": ["tags": ["$each": ["c", "a"]]]]).apply(to: result)
        XCTAssertEqual(result["tags"], ["a", "b", "c"])
        result = try MongoModifier(["$pull": ["tags": "a"]]).apply(to: result)
        XCTAssertEqual(result["tags"], ["b", "c"])
        result = try MongoModifier(["$push": ["tags": ["$each": ["d", "e"]]]]).apply(to: result)
        XCTAssertEqual(result["tags"], ["b", "c", "d", "e"])
    }

    func testDottedPathsReachIntoNestedObjects() throws {
        let result = try MongoModifier(["$set": ["location.city": "Paris"]]).apply(to: ["location": ["city": "Berlin", "zip": "10115"]])
        XCTAssertEqual(result["location"], ["city": "Paris", "zip": "10115"])
    }

    func testReplacementDocumentReplacesEveryFieldButTheID() throws {
        let result = try MongoModifier(["_id": "x", "name": "Grace"]).apply(to: player)
        XCTAssertEqual(EJSONValue.object(result), ["name": "Grace"])
    }

    func testMixingOperatorsAndFieldsIsRejected() {
        XCTAssertThrowsError(try MongoModifier(["$set": ["a": 1], "b": 2]))
    }

    func testUnsupportedOperatorsAreRejected() {
        XCTAssertThrowsError(try MongoModifier(["$rename": ["a": "b"]]))
    }

    func testModifyingTheIDIsRejected() {
        XCTAssertThrowsError(try MongoModifier(["$set": ["_id": "y"]]).apply(to: player))
    }
}
