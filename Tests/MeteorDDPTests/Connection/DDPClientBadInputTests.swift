import XCTest

@testable import MeteorDDP

/// A malformed, unknown or out-of-place server message is reported and survived: the connection keeps going.
final class DDPClientBadInputTests: XCTestCase {
    private func assertReportedAndSurvived(
        _ frame: String,
        kind expected: (DDPProtocolViolation.Kind) -> Bool,
        file: StaticString = #filePath,
        line: UInt = #line
    ) async {
        let harness = ClientHarness()
        harness.establishConnection()
        var errors = harness.client.errors.makeAsyncIterator()
        harness.receive(frame: frame)
        let error = await errors.next()
        XCTAssertEqual(error?.code, .protocolViolation, file: file, line: line)
        XCTAssertTrue(
            error?.violation.map { expected($0.kind) } ?? false, "got \(String(describing: error))", file: file,
            line: line)
        XCTAssertEqual(harness.status, .connected, file: file, line: line)
        harness.transport.clearSentFrames()
        harness.receive(frame: #"{"msg":"ping","id":"after"}"#)
        XCTAssertEqual(
            harness.transport.sentFrames, [#"{"msg":"pong","id":"after"}"#], "the connection still works", file: file,
            line: line)
    }

    func testTruncatedJSONIsReported() async {
        await assertReportedAndSurvived(#"{"msg":"added","collection":"c""#) {
            if case .malformedJSON = $0 { true } else { false }
        }
    }

    func testNonObjectIsReported() async {
        await assertReportedAndSurvived("[1,2,3]") { $0 == .notAnObject }
    }

    /// Meteor 3.5.1 (PR #14530) stopped its client's message handler throwing on a `null` frame; here it never did.
    func testANullFrameIsReportedAndTheConnectionGoesOn() async {
        await assertReportedAndSurvived("null") { $0 == .notAnObject }
    }

    func testMessageWithoutMsgIsReported() async {
        await assertReportedAndSurvived(#"{"server_id":"0","x":1}"#) { $0 == .missingMsg }
    }

    /// Meteor's client drops, without a word, the `{"server_id":"0"}` welcome of servers before Meteor 2.3 and the
    /// `{"testMessageOnConnect":true}` of a server run by `meteor test`; a frame merely like them is still reported.
    func testOlderServersGreetingsAreIgnoredNotReported() async {
        let harness = ClientHarness()
        var errors = harness.client.errors.makeAsyncIterator()
        harness.client.connect()
        harness.settle()
        harness.transport.open()
        harness.settle()
        harness.receive(frame: #"{"server_id":"0"}"#)
        harness.receive(.connected(session: "SESSION-1"))
        XCTAssertEqual(harness.status, .connected)
        for greeting in [#"{"server_id":"0"}"#, #"{"testMessageOnConnect":true}"#, #"{"testMessageOnConnect":1,"x":2}"#]
        {
            harness.receive(frame: greeting)
        }
        // Not greetings (Meteor logs each): a second key, a falsy server_id, a falsy testMessageOnConnect.
        let reported = [
            #"{"server_id":"0","x":1}"#, #"{"server_id":""}"#, #"{"server_id":0}"#, #"{"testMessageOnConnect":false}"#
        ]
        for frame in reported { harness.receive(frame: frame) }
        for frame in reported {
            let error = await errors.next()
            XCTAssertEqual(error?.violation?.kind, .missingMsg)
            XCTAssertEqual(error?.violation?.excerpt, frame, "the greetings before it were not reported")
        }
        XCTAssertEqual(harness.status, .connected)
    }

    func testUnknownMessageTypeIsReported() async {
        await assertReportedAndSurvived(#"{"msg":"addedBefore","collection":"c","id":"1","fields":{},"before":null}"#) {
            $0 == .unknownMessage("addedBefore")
        }
    }

    func testMissingFieldIsReported() async {
        await assertReportedAndSurvived(#"{"msg":"added","id":"1"}"#) {
            $0 == .missingField(message: "added", field: "collection")
        }
    }

    func testWronglyTypedFieldIsReported() async {
        await assertReportedAndSurvived(#"{"msg":"ready","subs":"a"}"#) {
            $0 == .wrongFieldType(message: "ready", field: "subs")
        }
    }

    func testConnectedWhileConnectedIsReportedAsOutOfPlace() async {
        await assertReportedAndSurvived(#"{"msg":"connected","session":"again"}"#) {
            if case .unexpected(message: "connected", _) = $0 { true } else { false }
        }
    }

    func testLoneSurrogateEscapeIsReportedAsAnInvalidEscape() async {
        // The README's row: `.malformedJSON` (`invalidEscape`), the frame skipped, the connection kept.
        let frame = #"{"msg":"added","collection":"c","id":"1","fields":{"s":"\ud800"}}"#
        await assertReportedAndSurvived(frame) {
            if case .malformedJSON(let reason) = $0 { reason.hasPrefix("invalid escape sequence") } else { false }
        }
    }

    func testLoneSurrogateEscapeAddsNoDocument() async {
        let harness = ClientHarness()
        harness.establishConnection()
        harness.receive(frame: #"{"msg":"added","collection":"c","id":"1","fields":{"s":"\ud800"}}"#)
        harness.receive(frame: #"{"msg":"added","collection":"c","id":"2","fields":{"s":"ok"}}"#)
        harness.flushData()
        XCTAssertEqual(harness.client.database.snapshot.documentCount(in: "c"), 1)
    }

    func testBinaryFrameIsReportedAndIgnored() async {
        let harness = ClientHarness()
        harness.establishConnection()
        var errors = harness.client.errors.makeAsyncIterator()
        harness.transport.receiveBinary(byteCount: 12)
        harness.settle()
        let error = await errors.next()
        XCTAssertEqual(error?.violation?.kind, .binaryFrame(byteCount: 12))
        XCTAssertEqual(harness.status, .connected)
    }

    func testDeeplyNestedJSONIsReportedNotACrash() async {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        await assertReportedAndSurvived(#"{"msg":"result","id":"1","result":"# + deep + "}") {
            if case .malformedJSON = $0 { true } else { false }
        }
    }
}
