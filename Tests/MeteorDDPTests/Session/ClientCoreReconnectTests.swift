import EJSON
import XCTest

@testable import MeteorDDP

/// A new socket as event scripts for ``ClientCore``: the resume first, the app's hooks, then the calls set aside
/// behind what the hooks called, then the subscriptions.
final class ClientCoreReconnectTests: XCTestCase {
    func testTheResumeComesFirstThenTheHooksThenTheOldCallsBehindTheHooksCallsThenTheSubscriptions() {
        var core = ClientCore.scripted()
        core.subscribe("todos")
        let old = core.call("todos.add")
        _ = core.handle(.resumeTokenChanged("tok"))
        core.session.userReconnectHooks["b"] = {}
        core.session.userReconnectHooks["a"] = {}

        let reset = core.socketReset()
        XCTAssertEqual(reset.resumeToken, "tok", "the login is resumed first")
        XCTAssertEqual(reset.userHooks.run, 1)
        XCTAssertEqual(reset.userHooks.hooks.count, 2)
        XCTAssertTrue(core.reconnectHooksAreRunning)
        XCTAssertFalse(core.session.methods.isSent(old.id), "set aside until the hooks ran")

        let fromHook = core.call("fromHook")
        XCTAssertTrue(core.session.methods.isSent(fromHook.id), "what a hook calls goes out at once")
        XCTAssertTrue(core.reconnectHooksFinished(run: 1))
        let (calls, subscriptions) = core.reconnectHooksRan()
        XCTAssertEqual(calls.map(\.name), ["todos.add"], "the old call joins the hook's block and goes out behind it")
        XCTAssertEqual(subscriptions.map(\.name), ["todos"])
        XCTAssertFalse(core.reconnectHooksAreRunning)
        XCTAssertTrue(core.reconnectHooksRan().subscriptions.isEmpty, "each subscription is sent once per socket")
    }

    /// A socket that drops while the app's hooks run: the first run's late return changes nothing.
    func testAnEarlierSocketsHooksFinishingLateAreIgnored() {
        var core = ClientCore.scripted()
        core.session.userReconnectHooks["hook"] = {}
        XCTAssertEqual(core.socketReset().userHooks.run, 1)
        XCTAssertEqual(core.socketReset().userHooks.run, 2)
        XCTAssertFalse(core.reconnectHooksFinished(run: 1))
        XCTAssertTrue(core.reconnectHooksAreRunning)
        XCTAssertTrue(core.reconnectHooksFinished(run: 2))
        XCTAssertFalse(core.reconnectHooksFinished(run: 2), "once")
    }

    func testTheHoldLimitStopsWaitingForTheHooksOnce() {
        var core = ClientCore.scripted()
        XCTAssertFalse(core.stopWaitingForReconnectHooks(), "no hooks running")
        core.session.userReconnectHooks["hook"] = {}
        _ = core.socketReset()
        XCTAssertTrue(core.stopWaitingForReconnectHooks())
        XCTAssertFalse(core.stopWaitingForReconnectHooks())
        XCTAssertFalse(core.reconnectHooksFinished(run: 1), "the hooks' late return changes nothing")
    }

    func testWithoutHooksTheResetGoesOnAtOnceAndASentNoRetryCallFails() {
        var core = ClientCore.scripted()
        let fragile = core.call("charge", noRetry: true)
        let reset = core.socketReset()
        XCTAssertTrue(reset.userHooks.hooks.isEmpty)
        XCTAssertFalse(core.stopWaitingForReconnectHooks(), "nothing is held for a run without hooks")
        XCTAssertTrue(core.reconnectHooksFinished(run: reset.userHooks.run))
        XCTAssertNil(reset.resumeToken, "not logged in: nothing to resume")
        XCTAssertEqual(reset.failedCalls.map(\.id), [fragile.id])
        XCTAssertTrue(core.reconnectHooksRan().calls.isEmpty, "a failed call is not sent again")
    }

    func testALogoutStopsTheResume() {
        var core = ClientCore.scripted()
        _ = core.handle(.resumeTokenChanged("tok1"))
        _ = core.handle(.resumeTokenChanged("tok2"))
        XCTAssertEqual(core.socketReset().resumeToken, "tok2", "the newest token")
        _ = core.handle(.resumeTokenChanged(nil))
        XCTAssertNil(core.socketReset().resumeToken)
    }
}
