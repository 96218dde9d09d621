import XCTest

@testable import MeteorDDP

final class HeartbeatStateMachineTests: XCTestCase {
    func testPingsAfterAnIntervalOfSilenceAndStartsTheTimeout() {
        var heartbeat = HeartbeatStateMachine()
        XCTAssertEqual(heartbeat.start(), [.cancelInterval, .cancelTimeout, .scheduleInterval])
        XCTAssertEqual(heartbeat.intervalElapsed(), [.sendPing, .scheduleTimeout, .scheduleInterval])
        XCTAssertEqual(heartbeat.timeoutElapsed(), [.cancelInterval, .reportTimeout])
    }

    func testAnyReceivedMessagePostponesThePing() {
        var heartbeat = HeartbeatStateMachine()
        _ = heartbeat.start()
        XCTAssertEqual(heartbeat.messageReceived(), [])
        XCTAssertEqual(heartbeat.intervalElapsed(), [.scheduleInterval], "a message was seen during the interval")
        XCTAssertEqual(heartbeat.intervalElapsed(), [.sendPing, .scheduleTimeout, .scheduleInterval])
    }

    func testAnyReceivedMessageCancelsThePendingTimeout() {
        var heartbeat = HeartbeatStateMachine()
        _ = heartbeat.start()
        _ = heartbeat.intervalElapsed()
        XCTAssertEqual(heartbeat.messageReceived(), [.cancelTimeout])
        XCTAssertEqual(heartbeat.timeoutElapsed(), [], "a late timeout after the answer does nothing")
    }

    func testNoSecondPingWhileOneIsOutstanding() {
        var heartbeat = HeartbeatStateMachine()
        _ = heartbeat.start()
        _ = heartbeat.intervalElapsed()
        XCTAssertEqual(heartbeat.intervalElapsed(), [.scheduleInterval])
    }

    func testStoppingCancelsBothTimersAndLaterEventsDoNothing() {
        var heartbeat = HeartbeatStateMachine()
        _ = heartbeat.start()
        _ = heartbeat.intervalElapsed()
        XCTAssertEqual(heartbeat.stop(), [.cancelInterval, .cancelTimeout])
        XCTAssertEqual(heartbeat.intervalElapsed(), [])
        XCTAssertEqual(heartbeat.timeoutElapsed(), [])
        XCTAssertEqual(heartbeat.messageReceived(), [])
        XCTAssertEqual(heartbeat.stop(), [])
    }
}
