import EJSON
import XCTest

@testable import MeteorDDP

/// Per-call deadlines (``MethodOptions/timeout``, ``DDPClient/Configuration/callTimeout``) as event scripts for
/// ``ClientCore``: a call with no `result` by its deadline fails with ``MethodError/Kind/timedOut`` as if the server
/// had answered so, an `updated` follows (its stub's writes give way to the server's versions), a `wait` call's barrier
/// is released, a call not on the wire yet is never sent, and a late answer is logged.
final class ClientCoreDeadlineTests: XCTestCase {
    private func describe(_ actions: [ClientCore.Action]) -> [String] { ClientCore.describe(actions) }

    private func connected(callTimeout: Duration? = nil) -> ClientCore {
        var configuration = DDPClient.Configuration()
        configuration.resumesSessions = false
        configuration.callTimeout = callTimeout
        return ClientCore.established(configuration)
    }

    /// Makes call `name` through the funnel (its stub wrote `originals`' documents; `kept`: in the offline store).
    private func call(
        _ core: inout ClientCore, _ name: String, timeout: Duration? = nil, wait: Bool = false,
        options: MethodOptions? = nil, originals: [(DocumentKey, EJSONObject?)] = [], kept: Bool = false
    ) -> (MethodCoordinator.Invocation, made: [String]) {
        let id = core.nextMethodID
        _ = core.handle(.stubRan(ClientCore.StubRun(id: id, replay: nil, originals: originals)))
        var callOptions = options ?? MethodOptions(wait: wait)
        if let timeout { callOptions.timeout = timeout }
        let invocation = MethodCoordinator.Invocation(
            id: id, name: name, message: .method(id: id, method: name, params: [], randomSeed: nil),
            options: callOptions, completion: { _ in })
        return (invocation, describe(core.handle(.callMade(invocation, kept: kept))))
    }

    /// The socket drops and a new one opens (no hooks): `connected` with a new session, whose hold waits for what the
    /// reset sent again.
    private func newSession(_ core: inout ClientCore) {
        _ = core.handle(.transportClosed(nil, generation: core.connectionGeneration))
        _ = core.handle(.timerFired(.retry))
        _ = core.handle(.transportOpened(generation: core.connectionGeneration))
        _ = core.handle(.reconnectHooksFinished(run: 2))
        _ = core.handle(.connectedReceived(session: "s2"))
    }

    func testASentCallWithNoResultByItsDeadlineFailsAsTimedOutAndALateAnswerIsLogged() {
        var core = connected()
        let (call, made) = call(&core, "todos.add", timeout: .seconds(5))
        XCTAssertEqual(made, ["schedule(callDeadline(id: \"\(call.id)\"))", "sendCalls(todos.add)"])
        let expired = describe(core.handle(.timerFired(.callDeadline(id: call.id))))
        XCTAssertEqual(expired, ["resultArrived(todos.add)", "requestFlush(1)"], "a result, then its `updated`")
        guard case .failure(let error as MethodError)? = call.result else {
            return XCTFail("\(String(describing: call.result))")
        }
        XCTAssertEqual(error.kind, .timedOut)
        _ = core.handle(.flushCompleted(ticket: 1))
        XCTAssertEqual(
            describe(core.handle(.methodDataVisible(id: call.id))),
            ["cancel(callDeadline(id: \"\(call.id)\"))", "complete(todos.add)"])
        XCTAssertEqual(describe(core.handle(.resultReceived(id: call.id, .success(1)))), ["lateAnswer(result)"])
        XCTAssertEqual(
            describe(core.handle(.updatedReceived(ids: [call.id], storeIsIdle: true, held: false))),
            ["lateAnswer(updated)"], "logged, not the server's violation")
    }

    func testACallAnsweredInTimeCancelsItsDeadline() {
        var core = connected()
        let (call, _) = call(&core, "todos.add", timeout: .seconds(5))
        _ = core.handle(.resultReceived(id: call.id, .success(1)))
        _ = core.handle(.updatedReceived(ids: [call.id], storeIsIdle: true, held: false))
        XCTAssertEqual(
            describe(core.handle(.methodDataVisible(id: call.id))),
            ["cancel(callDeadline(id: \"\(call.id)\"))", "complete(todos.add)"])
        XCTAssertEqual(
            describe(core.handle(.timerFired(.callDeadline(id: call.id)))), [], "a stale firing does nothing")
    }

    /// A `wait` call past its deadline releases its barrier: the calls behind it go out. A call behind a `wait` call
    /// (not on the wire) past its own deadline leaves the line and is never sent.
    func testAWaitCallsDeadlineReleasesItsBarrierAndAWaitingCallIsNeverSent() {
        var core = connected()
        let (login, _) = call(&core, "slow", timeout: .seconds(10), wait: true)
        let (behind, made) = call(&core, "todos.add", timeout: .seconds(5))
        XCTAssertEqual(made, ["schedule(callDeadline(id: \"\(behind.id)\"))"], "behind the wait call: not sent")
        let (after, _) = call(&core, "todos.rename")
        let expired = describe(core.handle(.timerFired(.callDeadline(id: behind.id))))
        XCTAssertEqual(expired.first, "resultArrived(todos.add)", "\(expired)")
        XCTAssertFalse(expired.contains { $0.hasPrefix("sendCalls") }, "never sent: \(expired)")
        guard case .failure(let error as MethodError)? = behind.result else { return XCTFail("no result") }
        XCTAssertEqual(error.kind, .timedOut)

        XCTAssertTrue(expired.contains("requestFlush(1)"), "its `updated` now, not behind the wait call: \(expired)")
        let barrier = describe(core.handle(.timerFired(.callDeadline(id: login.id))))
        XCTAssertEqual(
            barrier, ["resultArrived(slow)", "requestFlush(2)", "applyQuiescence(resetting: false)"],
            "its `updated` ends the hold the wait call kept")
        var sent: [String] = []
        var visible: [String] = []
        for ticket in [1, 2] {
            var due = core.due(after: .flushCompleted(ticket: ticket))
            while case .methodDataVisible(let id)? = due {
                visible.append(id)
                sent += describe(core.handle(.methodDataVisible(id: id))).filter { $0.hasPrefix("sendCalls") }
                due = core.due(after: .afterUpdatePerformed)
            }
        }
        XCTAssertEqual(visible, [behind.id, login.id], "both `updated`s synthesized, in order")
        XCTAssertEqual(sent, ["sendCalls(todos.rename)"], "the barrier released the next call, not the timed-out one")
        XCTAssertTrue(core.session.methods.isSent(after.id))
        XCTAssertNil(core.session.methods.invocations[behind.id])
    }

    /// A call whose `result` came in time but whose `updated` did not completes with its result at the deadline.
    func testACallWithItsResultButNoUpdatedCompletesWithItsResultAtTheDeadline() {
        var core = connected()
        let (call, _) = call(&core, "todos.add", timeout: .seconds(5))
        XCTAssertEqual(describe(core.handle(.resultReceived(id: call.id, .success(7)))), ["resultArrived(todos.add)"])
        let expired = describe(core.handle(.timerFired(.callDeadline(id: call.id))))
        XCTAssertEqual(expired, ["requestFlush(1)"], "its `updated` as if the server had sent it")
        XCTAssertEqual(
            describe(core.handle(.methodDataVisible(id: call.id))),
            ["cancel(callDeadline(id: \"\(call.id)\"))", "complete(todos.add)"])
        guard case .success(let value)? = call.result else { return XCTFail("\(String(describing: call.result))") }
        XCTAssertEqual(value, 7)
        XCTAssertEqual(
            describe(core.handle(.updatedReceived(ids: [call.id], storeIsIdle: true, held: false))),
            ["lateAnswer(updated)"])
    }

    /// The configuration's deadline applies to the app's calls, not to the client's own logins.
    func testTheConfiguredDeadlineAppliesToCallsButNotToLogins() {
        var core = connected(callTimeout: .seconds(30))
        let (plain, made) = call(&core, "todos.add")
        XCTAssertEqual(made.first, "schedule(callDeadline(id: \"\(plain.id)\"))")
        XCTAssertEqual(plain.timeout, .seconds(30))
        let (login, loginMade) = call(&core, "login", options: .credentials(wait: true))
        XCTAssertFalse(loginMade.contains { $0.hasPrefix("schedule") }, "\(loginMade)")
        XCTAssertNil(login.timeout)
        var own = MethodOptions()
        own.timeout = .seconds(2)
        let (short, _) = call(&core, "todos.remove", options: own)
        XCTAssertEqual(short.timeout, .seconds(2), "a call's own deadline wins")
    }

    // MARK: - Review findings

    /// A call re-sent on a new session blocks its hold; a subscription that never becomes ready again keeps the hold.
    /// The call's deadline still completes it: its made-up `updated` is not held (before, the call waited for the hold
    /// forever).
    func testADeadlineCompletesACallWhileAHoldIsKeptForOtherReasons() {
        var core = connected()
        core.subscribe("todos")
        let (call, _) = call(&core, "todos.add", timeout: .seconds(5))
        newSession(&core)
        XCTAssertTrue(core.isHoldingForQuiescence, "the new session's hold: the call and the subscription")
        let expired = describe(core.handle(.timerFired(.callDeadline(id: call.id))))
        XCTAssertEqual(expired, ["resultArrived(todos.add)", "requestFlush(1)"])
        guard case .methodDataVisible(call.id)? = core.due(after: .flushCompleted(ticket: 1)) else {
            return XCTFail("its data is visible after the flush")
        }
        XCTAssertEqual(
            describe(core.handle(.methodDataVisible(id: call.id))),
            ["cancel(callDeadline(id: \"\(call.id)\"))", "complete(todos.add)"])
        XCTAssertTrue(core.isHoldingForQuiescence, "the subscription still holds the data")
    }

    /// Meteor's order is `updated`, then `result`: a call with its `updated` but no `result` by the deadline fails too
    /// (before, the deadline ignored it), with no second `updated`.
    func testACallWithItsUpdatedButNoResultFailsAtTheDeadline() {
        var core = connected()
        let (call, _) = call(&core, "todos.add", timeout: .seconds(5))
        _ = core.handle(.updatedReceived(ids: [call.id], storeIsIdle: true, held: false))
        let expired = describe(core.handle(.timerFired(.callDeadline(id: call.id))))
        XCTAssertEqual(expired, ["resultArrived(todos.add)"], "no `updated` made up: its own came")
        guard case .failure(let error as MethodError)? = call.result else { return XCTFail("no result") }
        XCTAssertEqual(error.kind, .timedOut)
    }

    /// A call made while the socket is down is set aside for a resumption: past its deadline it fails, and the resumed
    /// session does not send it (before, the set-aside frame went out after the app was told it timed out).
    func testACallSetAsideWhileDownThatTimedOutIsNotSentOnResume() {
        var configuration = DDPClient.Configuration()
        configuration.resumesSessions = true
        var core = ClientCore(configuration: configuration)
        _ = core.handle(.connectRequested)
        _ = core.handle(.transportOpened(generation: 1))
        _ = core.handle(.reconnectHooksFinished(run: 1))
        _ = core.handle(.frameReceived(counted: true))
        _ = core.handle(.connectedReceived(session: "s1"))
        _ = core.handle(.transportClosed(nil, generation: core.connectionGeneration))
        let (call, made) = call(&core, "todos.add", timeout: .seconds(5))
        XCTAssertEqual(made, ["schedule(callDeadline(id: \"\(call.id)\"))"], "set aside")
        _ = core.handle(.timerFired(.callDeadline(id: call.id)))
        XCTAssertFalse(core.lateAnswersExpected.contains(call.id), "never on the wire: no answer can come")
        _ = core.handle(.timerFired(.retry))
        _ = core.handle(.transportOpened(generation: core.connectionGeneration))
        let resumed = describe(core.handle(.connectedReceived(session: "s1")))
        XCTAssertFalse(resumed.contains { $0.hasPrefix("sendCalls") }, "\(resumed)")
    }

    /// A call kept in the offline store leaves it at its deadline (a restart must not send it again).
    func testAKeptCallLeavesTheStoreAtItsDeadline() {
        var core = connected()
        let (kept, made) = call(&core, "todos.add", timeout: .seconds(5), kept: true)
        XCTAssertEqual(made.first?.hasPrefix("schedule"), true, "\(made)")
        let expired = describe(core.handle(.timerFired(.callDeadline(id: kept.id))))
        XCTAssertEqual(expired.first, "removeStoredCall(\(kept.id))", "\(expired)")
        XCTAssertFalse(expired.contains("storeResult(todos.add)"), "its failure is not stored: it left the store")
    }

    /// Found by the chaos soak: a call past its deadline while a new session's hold waits for another call's
    /// `updated` had its made-up `updated` wait behind that call's stub-written documents; applying the hold dropped
    /// the wait, and the call never completed. Its data now becomes visible behind the cache's updates alone.
    func testADeadlineDuringANewSessionsHoldCompletesTheCallOnceTheHoldIsApplied() {
        var core = connected()
        let todos = core.subscribe("todos")
        let key = DocumentKey(collectionName: "todos", documentID: "a")
        let (writer, _) = call(&core, "todos.write", originals: [(key, nil)])
        let writerID = writer.id
        let (late, _) = call(&core, "todos.add", timeout: .seconds(5))
        newSession(&core)
        XCTAssertTrue(core.isHoldingForQuiescence)

        var actions = core.handle(.timerFired(.callDeadline(id: late.id)))
        actions += core.handle(.resultReceived(id: writerID, .success(nil)))
        actions += core.handle(.updatedReceived(ids: [writerID], storeIsIdle: false, held: false))
        actions += core.handle(.readyReceived(ids: [todos], storeIsIdle: false, held: false))
        // The client performs what comes out, as its driver does: holds applied, flushes completed, due work done.
        var completed: [String] = []
        var tickets: [Int] = []
        while !actions.isEmpty || !tickets.isEmpty {
            if actions.isEmpty {
                var due = core.due(after: .flushCompleted(ticket: tickets.removeFirst()))
                while let work = due {
                    if case .methodDataVisible(let id) = work { actions += core.handle(.methodDataVisible(id: id)) }
                    due = core.due(after: .afterUpdatePerformed)
                }
                continue
            }
            switch actions.removeFirst() {
            case .applyQuiescence(let hold):
                for message in hold.messages {
                    switch message {
                    case .message(.updated(let ids)):
                        actions += core.handle(.updatedReceived(ids: ids, storeIsIdle: false, held: true))
                    case .message(.ready(let ids)):
                        actions += core.handle(.readyReceived(ids: ids, storeIsIdle: false, held: true))
                    default: break
                    }
                }
                actions += core.handle(.sessionResetApplied)
            case .requestFlush(let ticket): tickets.append(ticket)
            case .completeCall(let invocation, _): completed.append(invocation.name)
            default: break
            }
        }
        XCTAssertEqual(completed.sorted(), ["todos.add", "todos.write"], "both complete once the hold is applied")
    }
}
