import EJSON
import XCTest

@testable import MeteorDDP

/// Every frame of Meteor's own transcripts decodes to a typed message and encodes back byte for byte.
final class MessageWireFormatTests: XCTestCase {
    private let unsupportedServerFrames: Set<String> = ["addedBefore", "movedBefore"]

    func testEveryClientFrameInTheTranscriptsRoundTripsByteForByte() throws {
        let frames = try Fixtures.transcriptFrames().filter { $0.direction == "C->S" }
        XCTAssertGreaterThan(frames.count, 10)
        for (scenario, _, frame) in frames {
            let message = try ClientMessage(ejson: EJSON.parse(frame))
            XCTAssertEqual(EJSON.stringify(message.ejsonValue), frame, "in scenario \(scenario)")
        }
    }

    func testEveryServerFrameInTheTranscriptsDecodesOrIsAReportedViolation() throws {
        let frames = try Fixtures.transcriptFrames().filter { $0.direction == "S->C" }
        XCTAssertGreaterThan(frames.count, 10)
        var decoded = 0
        for (scenario, _, frame) in frames {
            switch DDPClient.parse(frame) {
            case .success(let message):
                decoded += 1
                XCTAssertEqual(EJSON.stringify(message.serverMessage.ejsonValue), frame, "in scenario \(scenario)")
            case .failure(let violation):
                switch violation.kind {
                case .unknownMessage(let name):
                    XCTAssertTrue(unsupportedServerFrames.contains(name), "\(name) in \(scenario)")
                case .malformedJSON, .missingMsg: break
                default: XCTFail("unexpected violation \(violation) in \(scenario)")
                }
            }
        }
        XCTAssertGreaterThan(decoded, 10)
    }

    func testMethodMessageOmitsRandomSeedWhenTheStubUsedNoRandomness() {
        let message = ClientMessage.method(id: "1", method: "a", params: [], randomSeed: nil)
        XCTAssertEqual(EJSON.stringify(message.ejsonValue), #"{"msg":"method","id":"1","method":"a","params":[]}"#)
    }

    func testSubWithoutParametersSendsAnEmptyParamsArray() {
        XCTAssertEqual(
            EJSON.stringify(ClientMessage.sub(id: "x", name: "todos", params: []).ejsonValue),
            #"{"msg":"sub","id":"x","name":"todos","params":[]}"#)
    }

    func testChangedKeepsClearedFieldsSeparately() throws {
        let message = try ServerMessage(
            ejson: EJSON.parse(
                #"{"msg":"changed","collection":"p","id":"l","fields":{"score":30},"cleared":["color"]}"#))
        XCTAssertEqual(message, .changed(collection: "p", id: "l", fields: ["score": 30], cleared: ["color"]))
    }

    func testAddedWithoutFieldsHasEmptyFields() throws {
        let message = try ServerMessage(ejson: EJSON.parse(#"{"msg":"added","collection":"p","id":"l"}"#))
        XCTAssertEqual(message, .added(collection: "p", id: "l", fields: [:]))
    }

    func testDatesInFieldsAreDecoded() throws {
        let message = try ServerMessage(
            ejson: EJSON.parse(
                #"{"msg":"added","collection":"p","id":"l","fields":{"createdAt":{"$date":1700000000123}}}"#))
        guard case .added(_, _, let fields) = message else { return XCTFail("not added") }
        XCTAssertEqual(fields["createdAt"], .date(millisecondsSince1970: 1_700_000_000_123))
    }

    func testResultErrorKeepsMeteorsCodeReasonAndDetails() throws {
        let message = try ServerMessage(
            ejson: EJSON.parse(
                #"{"msg":"result","id":"7","error":"#
                    + #"{"error":"too-many","reason":"slow down","details":{"n":3},"errorType":"Meteor.Error"}}"#
            ))
        guard case .result(_, nil, let error?) = message else { return XCTFail("no error") }
        XCTAssertEqual(error.error, .string("too-many"))
        XCTAssertEqual(error.reason, "slow down")
        XCTAssertEqual(error.details, ["n": 3])
    }

    func testResultWithoutResultKeyMeansUndefined() throws {
        let message = try ServerMessage(ejson: EJSON.parse(#"{"msg":"result","id":"7"}"#))
        XCTAssertEqual(message, .result(id: "7", result: nil, error: nil))
    }
}
