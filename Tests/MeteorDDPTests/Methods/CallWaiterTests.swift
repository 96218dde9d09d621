import EJSON
import XCTest

@testable import MeteorDDP

/// The contract between a task awaiting a call and the transport's thread that asks it to drain the inbox: no request
/// is lost (a finished task hands back the one it accepted, and accepts no more), and a drain comes before the outcome.
final class CallWaiterTests: XCTestCase {
    func testARequestBeforeTheTaskWaitsIsServedFirstThenTheOutcome() async {
        let waiter = CallWaiter()
        XCTAssertTrue(waiter.requestDrain())
        waiter.complete(.success(.string("done")))
        guard case .drain = await waiter.next() else { return XCTFail("the drain first: it may complete the call") }
        guard case .completed(.success(.string("done"))) = await waiter.next() else { return XCTFail("the outcome") }
        XCTAssertFalse(waiter.finish(), "nothing owed")
    }

    func testARequestWakesAWaitingTask() async {
        let waiter = CallWaiter()
        let woken = Task { await waiter.next() }
        // Whether the task is already suspended or not, the request reaches it.
        XCTAssertTrue(waiter.requestDrain())
        guard case .drain = await woken.value else { return XCTFail("woken to drain") }
    }

    func testAFinishedTaskHandsBackTheRequestItDidNotServeAndRefusesMore() {
        let waiter = CallWaiter()
        XCTAssertTrue(waiter.requestDrain())
        XCTAssertTrue(waiter.finish(), "accepted, not served: the task hands it over")
        XCTAssertFalse(waiter.requestDrain(), "finished: the transport's thread hands over itself")
        XCTAssertFalse(waiter.finish(), "handed back once")
    }

    func testCancellationWakesTheTask() async {
        let waiter = CallWaiter()
        let woken = Task { await waiter.next() }
        waiter.cancel()
        guard case .cancelled = await woken.value else { return XCTFail("woken by the cancellation") }
        XCTAssertTrue(waiter.requestDrain(), "not finished yet: a request is still accepted…")
        XCTAssertTrue(waiter.finish(), "…and handed back when the task finishes")
    }
}
