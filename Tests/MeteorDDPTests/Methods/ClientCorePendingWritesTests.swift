import XCTest

@testable import MeteorDDP

/// `waitForPendingWrites()` as event scripts for ``ClientCore``: a wait takes the calls pending when it starts and is
/// settled once each has completed; later calls do not hold it up; cancelled, it is forgotten; `close()` ends it.
final class ClientCorePendingWritesTests: XCTestCase {
    private func describe(_ actions: [ClientCore.Action]) -> [String] { ClientCore.describe(actions) }

    func testAWaitIsSettledWhenTheCallsPendingAtItsStartCompleteNotLaterOnes() {
        var core = ClientCore.scripted()
        XCTAssertEqual(describe(core.handle(.pendingWritesWaitRequested(token: 1))), ["pendingWritesSettled(1)"])
        let first = core.call("a")
        let second = core.call("b")
        XCTAssertEqual(describe(core.handle(.pendingWritesWaitRequested(token: 2))), [])
        let later = core.call("c")
        XCTAssertEqual(describe(core.handle(.pendingWritesWaitRequested(token: 3))), [])
        XCTAssertEqual(describe(core.handle(.callCompleted(id: second.id, wasKept: false))), [])
        XCTAssertEqual(
            describe(core.handle(.callCompleted(id: first.id, wasKept: false))), ["pendingWritesSettled(2)"],
            "the later call does not hold it up")
        XCTAssertEqual(describe(core.handle(.callCompleted(id: later.id, wasKept: false))), ["pendingWritesSettled(3)"])
        XCTAssertEqual(core.pendingWritesWaits, [:])
    }

    func testACancelledWaitIsForgottenAndCloseEndsTheOthers() {
        var core = ClientCore.scripted()
        let call = core.call("a")
        _ = core.handle(.pendingWritesWaitRequested(token: 1))
        _ = core.handle(.pendingWritesWaitRequested(token: 2))
        _ = core.handle(.pendingWritesWaitCancelled(token: 1))
        XCTAssertEqual(Array(core.pendingWritesWaits.keys), [2])
        let closing = describe(core.handle(.closeRequested))
        XCTAssertTrue(closing.contains("pendingWritesSettled(2, closed)"), "\(closing)")
        XCTAssertEqual(
            describe(core.handle(.pendingWritesWaitRequested(token: 3))), ["pendingWritesSettled(3, closed)"],
            "a closed client answers at once")
        _ = call
    }
}
