import XCTest

@testable import MeteorDDP

final class DDPClientHeartbeatTests: XCTestCase {
    func testSendsPingWithoutIDAfterAnIntervalOfSilence() {
        let harness = ClientHarness()
        harness.establishConnection()
        harness.transport.clearSentFrames()
        harness.advance(by: .milliseconds(17_499))
        XCTAssertEqual(harness.transport.sentFrames, [])
        harness.advance(by: .milliseconds(1))
        XCTAssertEqual(harness.transport.sentFrames, [#"{"msg":"ping"}"#])
    }

    func testAnyMessageDuringTheIntervalPostponesThePing() {
        let harness = ClientHarness()
        harness.establishConnection()
        harness.transport.clearSentFrames()
        harness.advance(by: .seconds(10))
        harness.receive(.ready(subscriptionIDs: []))
        harness.advance(by: .milliseconds(7_500))
        XCTAssertEqual(harness.transport.sentFrames, [], "a message was seen in the first interval")
        harness.advance(by: .milliseconds(17_500))
        XCTAssertEqual(harness.transport.sentFrames, [#"{"msg":"ping"}"#])
    }

    func testUnansweredPingTimesOutAndTheClientReconnects() {
        let harness = ClientHarness()
        harness.establishConnection()
        harness.advance(by: .milliseconds(17_500))
        harness.advance(by: .milliseconds(14_999))
        XCTAssertEqual(harness.status, .connected)
        harness.advance(by: .milliseconds(1))
        XCTAssertEqual(harness.status, .waiting)
        XCTAssertEqual(harness.client.status.reason?.code, .heartbeatTimedOut)
        XCTAssertTrue(harness.transport.closedByClient)
        harness.advance(by: .milliseconds(10))
        XCTAssertEqual(harness.transport.connectionAttempts, 2)
    }

    func testAnyMessageAnswersThePing() {
        let harness = ClientHarness()
        harness.establishConnection()
        harness.advance(by: .milliseconds(17_500))
        harness.receive(frame: #"{"msg":"added","collection":"c","id":"1","fields":{}}"#)
        harness.advance(by: .seconds(15))
        XCTAssertEqual(harness.status, .connected)
    }

    func testPre1SessionsHaveNoHeartbeat() {
        let harness = ClientHarness { $0.supportedVersions = [.pre1] }
        harness.establishConnection()
        harness.transport.clearSentFrames()
        harness.advance(by: .seconds(120))
        XCTAssertEqual(harness.transport.sentFrames, [])
        XCTAssertEqual(harness.status, .connected)
    }

    func testDisconnectingStopsTheHeartbeat() {
        let harness = ClientHarness()
        harness.establishConnection()
        harness.client.disconnect()
        harness.settle()
        XCTAssertEqual(harness.scheduler.pendingDelays, [])
    }
}
