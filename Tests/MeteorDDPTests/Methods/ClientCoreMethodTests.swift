import EJSON
import XCTest

@testable import MeteorDDP

/// Method calls as event scripts for ``ClientCore``: results and visible data in, what to send, store and complete
/// out; the offline store's durability gate; close. No client, queue or clock.
final class ClientCoreMethodTests: XCTestCase {
    private func invocation(_ core: inout ClientCore, _ name: String, wait: Bool = false) -> ClientCore.Invocation {
        let id = core.session.methods.makeMethodID()
        return MethodCoordinator.Invocation(
            id: id, name: name, message: .method(id: id, method: name, params: [], randomSeed: nil),
            options: MethodOptions(wait: wait), completion: { _ in }
        )
    }

    private func ids(_ invocations: [ClientCore.Invocation]) -> [String] { invocations.map(\.id) }

    func testACallCompletesOnceItHasItsResultAndItsDataInEitherOrder() {
        var core = ClientCore.scripted()
        let a = core.call("a")
        let b = core.call("b")

        let aData = core.methodDataVisible(a.id)
        XCTAssertNil(aData.resultArrived, "updated first: nothing for the app yet")
        XCTAssertNil(aData.completed)
        let aResult = core.methodResultReceived(a.id, .success(.string("A")))
        XCTAssertIdentical(aResult.resultArrived, a, "onResultReceived runs as the result arrives")
        XCTAssertIdentical(aResult.completed, a)
        XCTAssertNil(aResult.storeResult, "not kept")

        let bResult = core.methodResultReceived(b.id, .success(nil))
        XCTAssertIdentical(bResult.resultArrived, b)
        XCTAssertNil(bResult.completed, "its data is not visible yet")
        let bData = core.methodDataVisible(b.id)
        XCTAssertNil(bData.resultArrived, "heard once")
        XCTAssertIdentical(bData.completed, b)
    }

    /// Results complete calls in the server's order within a block; the next block goes out only when the first is
    /// done, and a wait block's call starts holding data as it goes.
    func testCompletionsFollowTheServersOrderAndTheNextBlockWaitsForTheFirst() {
        var core = ClientCore.scripted()
        let a = invocation(&core, "a")
        let b = invocation(&core, "b")
        let w = invocation(&core, "w", wait: true)
        let c = invocation(&core, "c")
        XCTAssertEqual(ids(core.callMade(a, kept: false)), [a.id])
        XCTAssertEqual(ids(core.callMade(b, kept: false)), [b.id], "same block: out at once")
        XCTAssertEqual(ids(core.callMade(w, kept: false)), [], "a wait call waits for the block before it")
        XCTAssertEqual(ids(core.callMade(c, kept: false)), [], "behind the wait call")

        var completed: [String] = []
        for id in [b.id, a.id] {
            _ = core.methodDataVisible(id)
            let progress = core.methodResultReceived(id, .success(nil))
            completed += progress.completed.map { [$0.id] } ?? []
            if id == b.id { XCTAssertEqual(ids(progress.send), [], "a is still outstanding") }
            if id == a.id { XCTAssertEqual(ids(progress.send), [w.id], "the first block is done: the wait call goes") }
        }
        XCTAssertEqual(completed, [b.id, a.id], "in the server's order, not the call order")
        XCTAssertTrue(core.isHoldingForQuiescence, "the wait call holds data until its updated")

        XCTAssertEqual(ids(core.methodResultReceived(w.id, .success(nil)).send), [])
        core.methodUpdated(w.id)
        let wDone = core.methodDataVisible(w.id)
        XCTAssertIdentical(wDone.completed, w)
        XCTAssertEqual(ids(wDone.send), [c.id], "the block after the wait call")
    }

    func testAResultForNoPendingCallIsUnknown() {
        var core = ClientCore.scripted()
        XCTAssertTrue(core.methodResultReceived("42", .success(nil)).unknown)
        XCTAssertTrue(core.methodDataVisible("42").unknown)
        let a = core.call("a")
        _ = core.methodResultReceived(a.id, .success(nil))
        XCTAssertTrue(core.methodResultReceived(a.id, .success(nil)).unknown, "a second result for the same call")
    }

    // MARK: - Whole calls through the funnel

    /// A kept call, from the disk to its completion, as the client meets it: it waits for the disk, goes out with the
    /// call behind it, its result arrives before its data (stored, for a restart), its data makes it complete and
    /// leave the store, and the wait call queued behind them goes out then.
    func testAKeptCallFromTheDiskToItsCompletionThroughTheFunnel() {
        var core = ClientCore.scripted()
        let kept = invocation(&core, "kept")
        let memory = invocation(&core, "memory")
        let wait = invocation(&core, "wait", wait: true)
        XCTAssertEqual(ids(core.callMade(kept, kept: true)), [])
        XCTAssertEqual(ids(core.callMade(memory, kept: false)), [])
        XCTAssertEqual(ids(core.callMade(wait, kept: false)), [], "a wait call is a block of its own, behind")
        XCTAssertEqual(describe(core.handle(.callBecameDurable(id: kept.id))), ["sendCalls(kept memory)"])
        XCTAssertEqual(
            describe(core.handle(.resultReceived(id: kept.id, .success(.number(1))))),
            ["resultArrived(kept)", "storeResult(kept)"])
        XCTAssertEqual(describe(core.handle(.methodDataVisible(id: kept.id))), ["complete(kept, kept)"])
        XCTAssertEqual(describe(core.handle(.methodDataVisible(id: memory.id))), [], "its result is not there")
        XCTAssertFalse(core.isHoldingForQuiescence)
        XCTAssertEqual(
            describe(core.handle(.resultReceived(id: memory.id, .failure(MeteorError(error: .number(500)))))),
            ["resultArrived(memory)", "complete(memory)", "sendCalls(wait)"], "the first block done: the next goes")
        XCTAssertTrue(core.isHoldingForQuiescence, "the wait call holds data from when it goes out")
        XCTAssertEqual(
            describe(core.handle(.resultReceived(id: memory.id, .success(nil)))), ["report(protocolViolation)"],
            "a second result for a completed call")
        XCTAssertEqual(
            describe(core.handle(.methodDataVisible(id: "42"))), ["report(protocolViolation)"], "no such call")
        XCTAssertEqual(describe(core.handle(.callBecameDurable(id: kept.id))), [], "long gone")
    }

    private func describe(_ actions: [ClientCore.Action]) -> [String] { ClientCore.describe(actions) }

    // MARK: - The durability gate

    func testAKeptCallAndEveryCallBehindItWaitForTheDisk() {
        var core = ClientCore.scripted()
        let kept = invocation(&core, "kept")
        let memory = invocation(&core, "memory")
        XCTAssertEqual(ids(core.callMade(kept, kept: true)), [], "not on disk yet")
        XCTAssertEqual(ids(core.callMade(memory, kept: false)), [], "in order: behind the kept call")
        XCTAssertEqual(ids(core.callBecameDurable(kept.id)), [kept.id, memory.id])
        XCTAssertEqual(ids(core.callBecameDurable(kept.id)), [], "released once")
    }

    func testCallsWaitForTheFirstOneNotOnDiskWhicheverBecomesDurableFirst() {
        var core = ClientCore.scripted()
        let first = invocation(&core, "first")
        let second = invocation(&core, "second")
        _ = core.callMade(first, kept: true)
        _ = core.callMade(second, kept: true)
        XCTAssertEqual(ids(core.callBecameDurable(second.id)), [], "the first is not on disk")
        XCTAssertEqual(ids(core.callBecameDurable(first.id)), [first.id, second.id])
    }

    func testAKeptWaitCallHoldsDataFromWhenItGoesOut() {
        var core = ClientCore.scripted()
        let login = invocation(&core, "login", wait: true)
        XCTAssertEqual(ids(core.callMade(login, kept: true)), [])
        XCTAssertFalse(core.isHoldingForQuiescence, "not sent, nothing to wait for")
        XCTAssertEqual(ids(core.callBecameDurable(login.id)), [login.id])
        XCTAssertTrue(core.isHoldingForQuiescence)
    }

    /// A reset drops the calls waiting for the disk: the method blocks send them again after the hooks, and they
    /// wait for the disk again there; each goes out once.
    func testAfterAResetACallNotOnDiskGoesOutOnceWhenItIsDurable() {
        var core = ClientCore.scripted()
        let kept = invocation(&core, "kept")
        _ = core.callMade(kept, kept: true)
        _ = core.socketReset()
        XCTAssertEqual(ids(core.reconnectHooksRan().calls), [], "still not on disk")
        XCTAssertEqual(ids(core.callBecameDurable(kept.id)), [kept.id])
    }

    func testAKeptCallStoresItsResultAndLeavesTheStoreWhenItCompletes() {
        var core = ClientCore.scripted()
        let kept = invocation(&core, "kept")
        _ = core.callMade(kept, kept: true)
        _ = core.callBecameDurable(kept.id)
        let result = core.methodResultReceived(kept.id, .success(.number(1)))
        XCTAssertIdentical(result.storeResult, kept, "answered before its data: the answer is stored")
        XCTAssertEqual(core.durability.kept, [kept.id])
        let done = core.methodDataVisible(kept.id)
        XCTAssertIdentical(done.completed, kept)
        XCTAssertTrue(done.completedWasKept)
        XCTAssertEqual(core.durability.kept, [])
    }

    func testARestoredCallIsKeptUntilItCompletes() {
        var core = ClientCore.scripted()
        let restored = MethodCoordinator.Invocation(
            id: "7", name: "restored", message: .method(id: "7", method: "restored", params: [], randomSeed: nil),
            options: MethodOptions(), completion: { _ in })
        restored.result = .success(nil)
        core.callRestored(restored)
        XCTAssertEqual(core.durability.kept, ["7"])
        XCTAssertEqual(core.session.methods.makeMethodID(), "8", "later ids follow the restored ones")
        let done = core.methodDataVisible("7")
        XCTAssertIdentical(done.completed, restored)
        XCTAssertTrue(done.completedWasKept)
    }

    // MARK: - Close

    func testCloseHandsBackEveryCallAndSubscriptionOnce() {
        var core = ClientCore.scripted()
        let a = core.call("a")
        let w = core.call("w", wait: true)
        let todos = core.subscribe("todos")
        let closing = core.close()
        XCTAssertEqual(closing.map { ids($0.failedCalls) }, [a.id, w.id], "in call order")
        XCTAssertEqual(closing?.stoppedSubscriptions.map(\.id), [todos])
        XCTAssertTrue(core.isClosed)
        XCTAssertNil(core.close(), "closed once")
        XCTAssertTrue(core.methodResultReceived(a.id, .success(nil)).unknown, "nothing is pending any more")
    }

    /// A subscription no handle uses lingers until its delay, or until the socket goes: then it is handed back to be
    /// stopped (the manager itself settles nothing).
    func testAResetHandsBackTheLingeringSubscriptionsToStop() {
        var core = ClientCore.scripted()
        let used = core.subscribe("used")
        let lingering = core.subscribe("lingering")
        XCTAssertNotNil(core.session.subscriptions.release(lingering))
        let reset = core.socketReset()
        XCTAssertEqual(reset.stoppedSubscriptions.map(\.id), [lingering])
        XCTAssertEqual(core.reconnectHooksRan().subscriptions.map(\.id), [used], "the one in use goes out again")
    }
}
