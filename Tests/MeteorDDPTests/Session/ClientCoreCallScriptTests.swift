import EJSON
import Foundation
import XCTest

@testable import MeteorDDP

/// Whole calls as scripts through the core's funnel (``ClientCore/handle(_:)``): every input the client hands it, from
/// the stub's run to the completion, and the actions it decides, in order. No client, queue or clock.
final class ClientCoreCallScriptTests: XCTestCase {
    private let todo = DocumentKey(collectionName: "todos", documentID: "t1")

    /// A core whose session is established on its first socket.
    private func established(_ configuration: DDPClient.Configuration = DDPClient.Configuration()) -> ClientCore {
        // Meteor's classic reconnect (resumption has its own scripts).
        var configuration = configuration
        configuration.resumesSessions = false
        let core = ClientCore.established(configuration)
        XCTAssertNotNil(core.sessionVersion)
        return core
    }

    /// A call whose stub ran (writing `writes`' documents), made: what the funnel decides for each step.
    private func call(
        _ core: inout ClientCore, _ name: String, wait: Bool = false, writes: [DocumentKey] = [],
        replay: Bool = false
    ) -> (MethodCoordinator.Invocation, ran: [String], made: [String]) {
        let id = core.nextMethodID
        let stub: MethodStub = { _ in nil }
        let ran = core.handle(
            .stubRan(
                ClientCore.StubRun(
                    id: id,
                    replay: replay
                        ? StubReplays.Call(
                            id: id, name: name, params: [], randomSeed: nil, stub: stub, lastReplayFailed: false,
                            reads: CacheReads()) : nil,
                    originals: writes.map { ($0, nil) })))
        let invocation = MethodCoordinator.Invocation(
            id: id, name: name, message: .method(id: id, method: name, params: [], randomSeed: nil),
            options: MethodOptions(wait: wait), completion: { _ in })
        let made = core.handle(.callMade(invocation, kept: false))
        return (invocation, describe(ran), describe(made))
    }

    private func added(_ key: DocumentKey, _ fields: EJSONObject = ["title": "milk"]) -> DocumentMessage {
        DocumentMessage(.added(collection: key.collectionName, id: key.documentID, fields: fields))!
    }

    /// A call with a stub, from its run to its completion: the stub's write keeps the server's `added` aside, the
    /// result reaches the app, `updated` releases the document to the cache and waits for its flush, and the flush's
    /// due work makes the call's data visible, which completes it.
    func testACallWithAStubFromItsRunToItsCompletion() {
        var core = established()
        let (add, ran, made) = call(&core, "todos.add", writes: [todo])
        XCTAssertEqual(add.id, "1", "the call took the core's first id")
        XCTAssertEqual(core.nextMethodID, "2")
        XCTAssertEqual(ran, [], "the stub's run decides nothing to do")
        XCTAssertEqual(made, ["sendCalls(todos.add)"])

        XCTAssertEqual(
            describe(core.handle(.documentReceived(added(todo), held: false))), ["notCached(keptAside(nil), t1)"],
            "the stub wrote it: the server's version is kept aside")
        XCTAssertEqual(
            describe(core.handle(.resultReceived(id: add.id, .success(.string("t1"))))), ["resultArrived(todos.add)"])
        XCTAssertEqual(
            describe(core.handle(.updatedReceived(ids: [add.id], storeIsIdle: true, held: false))),
            ["release([\"t1\"])", "requestFlush(1)"],
            "the server's version goes to the cache; the call's data is visible once that is applied")
        guard case .methodDataVisible(let id)? = core.due(after: .flushCompleted(ticket: 1)) else {
            return XCTFail("the flush makes the call's data visible")
        }
        XCTAssertEqual(describe(core.handle(.methodDataVisible(id: id))), ["complete(todos.add)"])
        XCTAssertNil(core.due(after: .afterUpdatePerformed), "nothing else waited")
        XCTAssertEqual(
            describe(core.handle(.removedReceived(collection: "todos", id: "t1", held: false))),
            ["applyToCache(removed t1)"],
            "no stub holds it any more: straight to the cache")
    }

    /// A reconnect: the new session's data is held until the revived subscription is ready, then applied as one
    /// reset; an unanswered call is sent again after the new socket's hooks.
    func testAReconnectHoldsTheNewSessionsDataUntilQuiescence() {
        var core = established()
        let todos = core.subscribe("todos")
        let (add, _, _) = call(&core, "todos.add")
        XCTAssertEqual(
            describe(core.handle(.transportClosed(nil, generation: 1))),
            [
                "forgetTransport", "cancel(heartbeatInterval)", "cancel(heartbeatTimeout)", "report(connectionLost)",
                "waitToRetry(0)"
            ])
        _ = core.handle(.timerFired(.retry))
        XCTAssertEqual(
            describe(core.handle(.transportOpened(generation: 3))), ["send(connect)", "runHooks(2, 0 hooks)"])
        XCTAssertEqual(
            describe(core.handle(.reconnectHooksFinished(run: 2))), ["sendCalls(todos.add)", "send(sub)"],
            "the unanswered call goes again, then the subscription")
        let connected = describe(core.handle(.connectedReceived(session: "s2")))
        XCTAssertFalse(connected.contains("applyQuiescence(resetting: true)"), "the subscription is not ready yet")

        XCTAssertEqual(describe(core.handle(.documentReceived(added(todo), held: false))), [], "held")
        XCTAssertEqual(
            describe(core.handle(.readyReceived(ids: [todos], storeIsIdle: true, held: false))), [],
            "held too: the call sent again on this socket has no `updated` yet")
        XCTAssertEqual(
            describe(core.handle(.resultReceived(id: add.id, .success(nil)))), ["resultArrived(todos.add)"],
            "a result is never held")
        XCTAssertEqual(
            describe(core.handle(.updatedReceived(ids: [add.id], storeIsIdle: true, held: false))),
            ["applyQuiescence(resetting: true)"], "the subscription is ready and the call updated: quiescence")
        XCTAssertFalse(core.isHoldingForQuiescence)

        // The client applies the hold: its messages come back in order, routed now, then the reset is applied.
        XCTAssertEqual(describe(core.handle(.documentReceived(added(todo), held: true))), ["applyToCache(added t1)"])
        XCTAssertEqual(
            describe(core.handle(.readyReceived(ids: [todos], storeIsIdle: false, held: true))), ["requestFlush(1)"],
            "the handle is ready once the new session's data is applied")
        XCTAssertEqual(
            describe(core.handle(.updatedReceived(ids: [add.id], storeIsIdle: false, held: true))),
            ["requestFlush(2)"], "the call's data is visible behind it, after a flush of its own")
        XCTAssertEqual(describe(core.handle(.sessionResetApplied)), [], "no restored cache to reconcile")
        guard case .subscriptionReady(let state)? = core.due(after: .flushCompleted(ticket: 1)) else {
            return XCTFail("the first flush makes the subscription ready")
        }
        XCTAssertEqual(state.name, "todos")
        XCTAssertNil(core.due(after: .afterUpdatePerformed), "the call's data waits for its own flush")
        guard case .methodDataVisible(let id)? = core.due(after: .flushCompleted(ticket: 2)) else {
            return XCTFail("the second flush makes the call's data visible")
        }
        XCTAssertEqual(describe(core.handle(.methodDataVisible(id: id))), ["complete(todos.add)"])
        XCTAssertNil(core.due(after: .afterUpdatePerformed))
    }

    /// The login barrier: a `wait` call (a login) goes out alone, holds the data that follows until its `updated`,
    /// and the calls made behind it go out once it completes.
    func testAWaitCallHoldsDataAndTheCallsBehindItUntilItCompletes() {
        var core = established()
        let (login, _, loginMade) = call(&core, "login", wait: true)
        XCTAssertEqual(loginMade, ["sendCalls(login)"])
        let (next, _, nextMade) = call(&core, "todos.add")
        XCTAssertEqual(nextMade, [], "behind the wait call")
        XCTAssertEqual(describe(core.handle(.documentReceived(added(todo), held: false))), [], "held behind the login")
        XCTAssertEqual(describe(core.handle(.resultReceived(id: login.id, .success(nil)))), ["resultArrived(login)"])
        XCTAssertEqual(
            describe(core.handle(.updatedReceived(ids: [login.id], storeIsIdle: true, held: false))),
            ["applyQuiescence(resetting: false)"], "its updated ends the hold")
        XCTAssertEqual(describe(core.handle(.documentReceived(added(todo), held: true))), ["applyToCache(added t1)"])
        XCTAssertEqual(
            describe(core.handle(.updatedReceived(ids: [login.id], storeIsIdle: false, held: true))),
            ["requestFlush(1)"], "visible once the held data is applied")
        guard case .methodDataVisible(let id)? = core.due(after: .flushCompleted(ticket: 1)) else {
            return XCTFail("the flush makes the login's data visible")
        }
        XCTAssertEqual(
            describe(core.handle(.methodDataVisible(id: id))), ["complete(login)", "sendCalls(todos.add)"],
            "the call behind it goes out as it completes")
        _ = next
    }

    /// ``PendingStubMode/rebase``: the server's change of a document a pending stub wrote makes a replay due at the
    /// end of the burst; the client asks for the round, runs it and records it.
    func testARebaseReplayIsDueAfterTheBurstThatChangedAStubsDocument() {
        var configuration = DDPClient.Configuration()
        configuration.pendingStubMode = .rebase
        var core = established(configuration)
        let (add, _, _) = call(&core, "todos.add", writes: [todo], replay: true)
        XCTAssertEqual(describe(core.handle(.burstHandled)), ["pushCacheUpdates"], "nothing changed: no replay")
        XCTAssertEqual(
            describe(core.handle(.documentReceived(added(todo), held: false))), ["notCached(keptAside(nil), t1)"])
        XCTAssertEqual(describe(core.handle(.burstHandled)), ["replayPendingStubs", "pushCacheUpdates"])
        XCTAssertEqual(
            describe(core.handle(.replayRoundRequested(stubNamed: { _ in nil }))), ["replayRound(todos.add)"])
        XCTAssertEqual(
            describe(
                core.handle(
                    .replayRoundRan(
                        [
                            ClientCore.ReplayedStub(
                                id: add.id, originals: [(todo, ["title": "milk"])], failed: true, randomSeed: nil,
                                reads: CacheReads())
                        ], escaped: [], round: 1))), ["replayStartedFailing(1)"], "its replay started throwing")
        XCTAssertEqual(describe(core.handle(.replayRoundRequested(stubNamed: { _ in nil }))), [], "done")
        XCTAssertEqual(describe(core.handle(.burstHandled)), ["pushCacheUpdates"])
    }

    /// With an offline store, what the store keeps is read after the actions that change it: after the burst's
    /// replay (the documents a replayed stub wrote for the first time are kept aside from then on), and, when the
    /// reconciliation delay ends the hold, after the hold is applied (it resets the server versions and the
    /// subscriptions the store lists). Read when decided, the store got the earlier state last and kept it.
    func testTheStoreIsToldAfterTheReplayAndAfterTheHoldItFollows() {
        var configuration = DDPClient.Configuration()
        configuration.pendingStubMode = .rebase
        configuration.persistence = .sqlite(at: URL(fileURLWithPath: "/nonexistent/never-opened.sqlite"))
        var core = ClientCore(configuration: configuration)
        let restored = StoredSubscription(name: "lists", params: [])
        XCTAssertEqual(
            describe(
                core.handle(
                    .storeRestored(
                        ClientCore.RestoredState(
                            serverDocuments: [], methods: [], calls: [], subscriptions: [restored], stubEffects: [:],
                            hasState: true)))), [])
        _ = core.handle(.connectRequested)
        _ = core.handle(.transportOpened(generation: 1))
        _ = core.handle(.reconnectHooksFinished(run: 1))
        XCTAssertTrue(
            describe(core.handle(.connectedReceived(session: "s1"))).contains("schedule(reconciliation)"),
            "the restored subscription is awaited until the delay ends")
        XCTAssertTrue(core.isHoldingForQuiescence)
        XCTAssertEqual(
            describe(core.handle(.timerFired(.reconciliation))),
            ["applyQuiescence(resetting: true)", "persistSessionChanges"],
            "the store is told once the hold is applied, not before")
        XCTAssertEqual(describe(core.handle(.sessionResetApplied)), ["cancel(reconciliation)"])
        XCTAssertEqual(
            describe(core.handle(.sessionChangesRequested)), ["store(0 documents, subscriptions: 0)"],
            "reconciled: the restored subscription the app did not make again is no longer listed")

        let (_, _, _) = call(&core, "todos.add", writes: [todo], replay: true)
        _ = core.handle(.documentReceived(added(todo), held: false))
        XCTAssertEqual(
            describe(core.handle(.burstHandled)), ["replayPendingStubs", "pushCacheUpdates", "persistSessionChanges"],
            "the store is told after the replay")
    }

    /// A call whose `updated` came on a socket that then dropped, before its `result`: the new socket sends it again,
    /// and the old run's data becoming visible (its flush completes after the call went out again) does not count for
    /// the new run. The call completes once the new session's `result` and `updated` came and its data is applied, and
    /// the new session's `updated` is not a protocol violation. (Meteor's `MethodInvoker.sendMessage` clears
    /// `_dataVisible` for the same reason.)
    func testTheOldSocketsUpdatedDoesNotCountForTheCallSentAgain() {
        var core = established()
        let todos = core.subscribe("todos")
        let (add, _, _) = call(&core, "todos.add")
        XCTAssertEqual(
            describe(core.handle(.updatedReceived(ids: [add.id], storeIsIdle: false, held: false))),
            ["requestFlush(1)"], "the first run's data is visible once the cache applied what came before")
        _ = core.handle(.transportClosed(nil, generation: 1))
        _ = core.handle(.timerFired(.retry))
        _ = core.handle(.transportOpened(generation: 3))
        XCTAssertEqual(
            describe(core.handle(.reconnectHooksFinished(run: 2))), ["sendCalls(todos.add)", "send(sub)"],
            "no result came: the call goes again")
        // The client performs what the flush hands out, as `DDPClient.flushCompleted` does.
        var afterOldFlush: [String] = []
        var work = core.due(after: .flushCompleted(ticket: 1))
        while let due = work {
            if case .methodDataVisible(let id) = due {
                afterOldFlush += describe(core.handle(.methodDataVisible(id: id)))
            }
            work = core.due(after: .afterUpdatePerformed)
        }
        XCTAssertFalse(
            afterOldFlush.contains("complete(todos.add)") || afterOldFlush.contains("report(protocolViolation)"),
            "the old run's flush completes nothing: \(afterOldFlush)")
        _ = core.handle(.connectedReceived(session: "s2"))

        var actions = core.handle(.resultReceived(id: add.id, .success(nil)))
        XCTAssertEqual(describe(actions), ["resultArrived(todos.add)"], "the new run's data is not visible yet")
        actions += core.handle(.readyReceived(ids: [todos], storeIsIdle: true, held: false))
        actions += core.handle(.updatedReceived(ids: [add.id], storeIsIdle: true, held: false))
        XCTAssertEqual(describe(actions).last, "applyQuiescence(resetting: true)")
        actions = core.handle(.readyReceived(ids: [todos], storeIsIdle: false, held: true))
        actions += core.handle(.updatedReceived(ids: [add.id], storeIsIdle: false, held: true))
        actions += core.handle(.sessionResetApplied)
        var due: [ClientCore.Action] = []
        for case .requestFlush(let ticket) in actions {
            if let work = core.due(after: .flushCompleted(ticket: ticket)) { due.append(.performAfterUpdate(work)) }
            while let work = core.due(after: .afterUpdatePerformed) { due.append(.performAfterUpdate(work)) }
        }
        for case .performAfterUpdate(.methodDataVisible(let id)) in due {
            actions += core.handle(.methodDataVisible(id: id))
        }
        let described = describe(actions)
        XCTAssertFalse(described.contains("report(protocolViolation)"), "\(described)")
        XCTAssertEqual(described.filter { $0 == "complete(todos.add)" }.count, 1, "\(described)")
    }

    /// `close()` with calls in flight: they fail, in call order, the subscriptions stop, and a call's late answers
    /// change nothing.
    func testCloseWithCallsInFlight() {
        var core = established()
        _ = core.subscribe("todos")
        let (first, _, _) = call(&core, "first")
        _ = call(&core, "second")
        XCTAssertEqual(
            describe(core.handle(.closeRequested)).last, "closed(calls: first second, subscriptions: todos)")
        XCTAssertTrue(core.isClosed)
        XCTAssertEqual(
            describe(core.handle(.resultReceived(id: first.id, .success(nil)))), ["report(protocolViolation)"],
            "no call has the id any more")
        XCTAssertEqual(describe(core.handle(.connectRequested)), [], "a closed client does not connect")
    }

    private func describe(_ actions: [ClientCore.Action]) -> [String] { ClientCore.describe(actions) }
}
