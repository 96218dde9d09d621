import EJSON
import XCTest

@testable import MeteorDDP

final class DDPClientSubscriptionTests: XCTestCase {
    private func subMessages(_ harness: ClientHarness) -> [ClientMessage] {
        harness.sent.filter { if case .sub = $0 { true } else { false } }
    }

    private func waitUntilReady(_ subscription: Subscription, file: StaticString = #filePath, line: UInt = #line) {
        let ready = expectation(description: "ready")
        subscription.whenReady { error in
            XCTAssertNil(error, file: file, line: line)
            ready.fulfill()
        }
        wait(for: [ready], timeout: 5)
    }

    func testSubscribingWithoutParametersSendsSubWithEmptyParams() {
        let harness = ClientHarness()
        harness.establishConnection()
        let sub = harness.client.subscribe("todos")
        harness.settle()
        XCTAssertEqual(subMessages(harness), [.sub(id: sub.id, name: "todos", params: [])])
        XCTAssertEqual(sub.id.count, 17)
        XCTAssertEqual(sub.status, .pending)
    }

    func testSubscribingWithParametersSendsThem() {
        let harness = ClientHarness()
        harness.establishConnection()
        let sub = harness.client.subscribe("todos", params: [20, ["limit": 10]])
        harness.settle()
        XCTAssertEqual(subMessages(harness), [.sub(id: sub.id, name: "todos", params: [20, ["limit": 10]])])
    }

    func testSubscribingWhileOfflineSendsTheSubOnceConnected() {
        let harness = ClientHarness()
        let sub = harness.client.subscribe("todos")
        harness.establishConnection()
        XCTAssertEqual(subMessages(harness), [.sub(id: sub.id, name: "todos", params: [])])
        XCTAssertEqual(harness.transport.sentFrames.first?.contains(#""msg":"connect""#), true, "connect goes first")
    }

    func testTheSameNameAndEqualParamsShareOneServerSubscription() {
        let harness = ClientHarness()
        harness.establishConnection()
        let a = harness.client.subscribe("todos", params: [["x": 1, "y": 2]])
        let b = harness.client.subscribe("todos", params: [["y": 2, "x": 1]])
        let c = harness.client.subscribe("todos", params: [["x": 2]])
        harness.settle()
        XCTAssertEqual(a.id, b.id)
        XCTAssertNotEqual(a.id, c.id)
        XCTAssertEqual(subMessages(harness).count, 2)
    }

    func testOneReadyMessageReadiesSeveralSubscriptions() {
        let harness = ClientHarness()
        harness.establishConnection()
        let a = harness.client.subscribe("a")
        let b = harness.client.subscribe("b")
        harness.receive(.ready(subscriptionIDs: [a.id, b.id]))
        waitUntilReady(a)
        waitUntilReady(b)
        XCTAssertTrue(a.isReady && b.isReady)
    }

    func testReadyAsyncReturnsOnceReady() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let sub = harness.client.subscribe("a")
        harness.receive(.ready(subscriptionIDs: [sub.id]))
        try await sub.ready()
        XCTAssertEqual(sub.status, .ready)
    }

    func testNosubWithErrorFailsTheSubscriptionWithMeteorsError() async {
        let harness = ClientHarness()
        harness.establishConnection()
        let sub = harness.client.subscribe("missing")
        harness.receive(
            .nosub(id: sub.id, error: MeteorError(error: .number(404), reason: "Subscription 'missing' not found")))
        do {
            try await sub.ready()
            XCTFail("ready must throw")
        } catch let error as MeteorError {
            // The server's error itself, as a method's refusal is thrown (one catch for every server error).
            XCTAssertEqual(error.error, 404)
            XCTAssertEqual(error.reason, "Subscription 'missing' not found")
        } catch {
            XCTFail("unexpected \(error)")
        }
        XCTAssertFalse(sub.isReady)
        guard case .failed(let failure) = sub.status else { return XCTFail("status \(sub.status)") }
        XCTAssertEqual(failure.name, "missing")
        XCTAssertEqual(failure.meteorError.error, 404)
    }

    func testNosubWithoutErrorStopsTheSubscriptionDistinguishablyFromReady() async {
        let harness = ClientHarness()
        harness.establishConnection()
        let sub = harness.client.subscribe("a")
        harness.receive(.nosub(id: sub.id, error: nil))
        XCTAssertEqual(sub.status, .stopped)
        do {
            try await sub.ready()
            XCTFail("ready must throw")
        } catch {
            XCTAssertTrue(error is SubscriptionStoppedError)
        }
    }

    func testStoppingSendsUnsubAfterTheNotInUseTimeout() {
        let harness = ClientHarness()
        harness.establishConnection()
        let sub = harness.client.subscribe("a", notInUseTimeout: .seconds(10))
        harness.settle()
        sub.stop()
        harness.settle()
        harness.advance(by: .milliseconds(9_999))
        XCTAssertFalse(harness.sent.contains(.unsub(id: sub.id)))
        harness.advance(by: .milliseconds(1))
        XCTAssertTrue(harness.sent.contains(.unsub(id: sub.id)))
        XCTAssertEqual(sub.status, .stopped)
    }

    func testStoppingWithZeroTimeoutUnsubscribesAtOnce() {
        let harness = ClientHarness()
        harness.establishConnection()
        let sub = harness.client.subscribe("a", notInUseTimeout: .zero)
        sub.stop()
        harness.settle()
        XCTAssertEqual(harness.sent.last, .unsub(id: sub.id))
    }

    func testResubscribingWithinTheTimeoutReusesTheSubscriptionAndSendsNothing() {
        let harness = ClientHarness()
        harness.establishConnection()
        let first = harness.client.subscribe("a", notInUseTimeout: .seconds(10))
        harness.receive(.ready(subscriptionIDs: [first.id]))
        first.stop()
        harness.settle()
        let second = harness.client.subscribe("a")
        harness.advance(by: .seconds(20))
        XCTAssertEqual(second.id, first.id)
        XCTAssertEqual(subMessages(harness).count, 1)
        XCTAssertFalse(harness.sent.contains(.unsub(id: first.id)))
        waitUntilReady(second)
    }

    func testStopIsIdempotentAndAnotherHandleKeepsTheSubscription() {
        let harness = ClientHarness()
        harness.establishConnection()
        let a = harness.client.subscribe("a", notInUseTimeout: .zero)
        let b = harness.client.subscribe("a", notInUseTimeout: .zero)
        a.stop()
        a.stop()
        harness.settle()
        XCTAssertFalse(harness.sent.contains(.unsub(id: a.id)))
        b.stop()
        harness.settle()
        XCTAssertTrue(harness.sent.contains(.unsub(id: a.id)))
    }

    func testDroppingTheLastHandleReleasesTheSubscription() {
        let harness = ClientHarness()
        harness.establishConnection()
        var sub: Subscription? = harness.client.subscribe("a", notInUseTimeout: .zero)
        let id = sub!.id
        harness.settle()
        sub = nil
        harness.settle()
        XCTAssertTrue(harness.sent.contains(.unsub(id: id)))
    }

    func testReconnectingResendsSubsInUseWithTheSameIDsAndDropsUnusedOnes() {
        let harness = ClientHarness()
        harness.establishConnection()
        let kept = harness.client.subscribe("kept")
        let dropped = harness.client.subscribe("dropped", notInUseTimeout: .seconds(100))
        harness.receive(.ready(subscriptionIDs: [kept.id, dropped.id]))
        dropped.stop()
        harness.settle()
        harness.dropAndReopen()
        XCTAssertEqual(subMessages(harness), [.sub(id: kept.id, name: "kept", params: [])])
        XCTAssertEqual(dropped.status, .stopped)
    }

    func testReadyAndNosubForUnknownIDsAreHarmless() {
        let harness = ClientHarness()
        harness.establishConnection()
        let sub = harness.client.subscribe("a")
        harness.receive(.ready(subscriptionIDs: ["nope"]))
        harness.receive(.nosub(id: "nope", error: nil))
        XCTAssertEqual(sub.status, .pending)
        XCTAssertEqual(harness.status, .connected)
    }

    func testStoppedSubscriptionIgnoresTheServersLaterNosub() {
        let harness = ClientHarness()
        harness.establishConnection()
        let sub = harness.client.subscribe("a", notInUseTimeout: .zero)
        sub.stop()
        harness.settle()
        harness.receive(.nosub(id: sub.id, error: MeteorError(error: .number(500))))
        XCTAssertEqual(sub.status, .stopped)
    }

    func testStatusUpdatesReportPendingReadyAndTheEnd() async {
        let harness = ClientHarness()
        harness.establishConnection()
        let sub = harness.client.subscribe("a", notInUseTimeout: .zero)
        var updates = sub.statusUpdates.makeAsyncIterator()
        let first = await updates.next()
        XCTAssertEqual(first, .pending)
        harness.receive(.ready(subscriptionIDs: [sub.id]))
        let second = await updates.next()
        XCTAssertEqual(second, .ready)
        harness.receive(.nosub(id: sub.id, error: MeteorError(error: .number(500), reason: "boom")))
        let third = await updates.next()
        guard case .failed(let error)? = third else {
            return XCTFail("expected failed, got \(String(describing: third))")
        }
        XCTAssertEqual(error.meteorError.reason, "boom")
        let end = await updates.next()
        XCTAssertNil(end, "a failed subscription's status sequence ends")
    }
}
