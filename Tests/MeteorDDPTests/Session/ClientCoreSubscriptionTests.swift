import EJSON
import XCTest

@testable import MeteorDDP

/// Subscriptions as event scripts for ``ClientCore``.
final class ClientCoreSubscriptionTests: XCTestCase {
    private let userCode = UserCodeQueue(label: "ClientCoreSubscriptionTests")

    private func subscribe(_ core: inout ClientCore, _ name: String, timeout: Duration = .zero) -> ClientCore.Subscribed
    {
        core.subscribe(name: name, params: ["a"], notInUseTimeout: timeout, userCode: userCode) { "id-\(name)" }
    }

    func testASubscriptionMadeOfflineGoesOutOnTheNextSocketAfterTheHooks() {
        var core = ClientCore.scripted()
        let offline = subscribe(&core, "todos")
        XCTAssertTrue(offline.isNew)
        XCTAssertFalse(offline.sendNow, "no socket: nothing goes out")
        _ = core.handle(.connectRequested)
        _ = core.handle(.transportOpened(generation: core.connectionGeneration))
        let sent = core.handle(.reconnectHooksFinished(run: 1)).compactMap { action -> String? in
            guard case .send(.sub(let id, _, _)) = action else { return nil }
            return id
        }
        XCTAssertEqual(sent, ["id-todos"])
        let online = subscribe(&core, "lists")
        XCTAssertTrue(online.sendNow, "a new subscription on an open socket goes out at once")
        XCTAssertTrue(core.reconnectHooksRan().subscriptions.isEmpty, "each goes out once")
    }

    /// `ready` and `nosub` through the funnel: an unknown id is logged; a subscription becomes ready behind the cache's
    /// pending updates (a flush asked for) or at once when it is idle, and after the server's versions of documents a
    /// sent call's stub wrote; a second `ready` changes nothing; `nosub` stops it, or fails it with the server's error.
    func testReadyAndNosubThroughTheFunnel() {
        var core = ClientCore.scripted()
        let todos = subscribe(&core, "todos").record
        let lists = subscribe(&core, "lists").record
        let tags = subscribe(&core, "tags").record
        XCTAssertEqual(
            describe(core.handle(.readyReceived(ids: ["nope", todos.id], storeIsIdle: false, held: false))),
            ["unknown(ready nope)", "requestFlush(1)"], "behind what the cache has still to apply")
        XCTAssertEqual(
            describe(core.handle(.readyReceived(ids: [lists.id], storeIsIdle: true, held: false))), [],
            "idle, but behind the work already waiting")
        guard case .subscriptionReady(let first)? = core.due(after: .flushCompleted(ticket: 1)),
            case .subscriptionReady(let second)? = core.due(after: .afterUpdatePerformed)
        else { return XCTFail("both ready once the flush is done") }
        XCTAssertEqual([first.name, second.name], ["todos", "lists"], "in the order the frames came")
        XCTAssertNil(core.due(after: .afterUpdatePerformed))
        // A sent call's stub wrote a document: a ready waits for its server version.
        let call = core.call("add")
        core.stubRan(methodID: call.id, originals: [(DocumentKey(collectionName: "todos", documentID: "a"), nil)])
        XCTAssertEqual(describe(core.handle(.readyReceived(ids: [tags.id], storeIsIdle: true, held: false))), [])
        XCTAssertEqual(core.releaseDocuments(writtenBy: call.id).flushedWork.count, 1, "due when it is released")

        XCTAssertEqual(
            describe(core.handle(.nosubReceived(id: todos.id, error: nil, storeIsIdle: true, held: false))),
            ["settle(todos, stopped)"])
        let refused = MeteorError(error: .number(403), reason: "no")
        guard
            case .settleSubscription(let record, .failed(let error))? =
                core.handle(.nosubReceived(id: lists.id, error: refused, storeIsIdle: true, held: false)).first
        else { return XCTFail("not failed") }
        XCTAssertEqual(record.name, "lists")
        XCTAssertEqual(error.meteorError, refused)
        XCTAssertEqual(
            describe(core.handle(.nosubReceived(id: todos.id, error: nil, storeIsIdle: true, held: false))),
            ["unknown(nosub \(todos.id))"], "ended already")
    }

    private func describe(_ actions: [ClientCore.Action]) -> [String] { ClientCore.describe(actions) }

    func testSubscribingAgainJoinsTheSubscriptionAndSendsNothing() {
        var core = ClientCore.scripted()
        _ = core.handle(.connectRequested)
        _ = core.handle(.transportOpened(generation: core.connectionGeneration))
        let first = subscribe(&core, "todos")
        let second = subscribe(&core, "todos")
        XCTAssertFalse(second.isNew)
        XCTAssertFalse(second.sendNow)
        XCTAssertEqual(second.record.id, first.record.id)
    }

    /// A revived subscription the app stops before it is ready again no longer holds the new session's data back.
    func testUnsubscribingASubscriptionQuiescenceWaitsForAppliesTheHold() throws {
        var core = ClientCore.scripted()
        let todos = subscribe(&core, "todos").record.id
        _ = core.session.subscriptions.ready([todos])
        XCTAssertNil(core.reconnect(), "todos must be ready again")
        XCTAssertNil(core.holdUntilQuiescence(.message(.added(collection: "todos", id: "a", fields: [:]))).quiescent)
        let (_, generation) = try XCTUnwrap(core.session.subscriptions.release(todos))
        XCTAssertNil(core.unsubscribeIfUnused(todos, generation: generation - 1), "a stale timer changes nothing")
        let unsubscribed = try XCTUnwrap(core.unsubscribeIfUnused(todos, generation: generation))
        XCTAssertEqual(unsubscribed.record.id, todos)
        XCTAssertEqual(unsubscribed.quiescent?.messages.count, 1, "the held message is applied")
        XCTAssertFalse(core.isHoldingForQuiescence)
    }

    /// After a restart, the first connection waits for the restored subscriptions the app makes again; once the
    /// delay for making them is over, the ones not made stop holding the data back.
    func testRestoredSubscriptionsNoLongerAwaitedApplyTheHold() {
        var core = ClientCore.scripted()
        core.session.subscriptions.startRestoredRevival([SubscriptionManager.Identity(name: "todos", params: ["a"])])
        XCTAssertNil(
            core.sessionConnected(isReconnect: false, reconciling: true), "the restored subscription is awaited")
        XCTAssertEqual(core.stopAwaitingRestoredSubscriptions()?.resetting, true)
    }

    /// `ready` names the subscriptions it makes ready (the client settles those not settled yet) and hands back
    /// unknown ids to be logged; `nosub` ends a subscription once.
    func testReadyAndNosubForKnownAndUnknownSubscriptions() {
        var core = ClientCore.scripted()
        let todos = subscribe(&core, "todos").record.id
        let ready = core.subscriptionsReady([todos, "nobody"])
        XCTAssertEqual(ready.ready.map(\.id), [todos])
        XCTAssertEqual(ready.unknown, ["nobody"])
        XCTAssertFalse(core.session.subscriptions.hasPendingSubscriptions)
        XCTAssertEqual(core.subscriptionEnded(todos)?.id, todos)
        XCTAssertNil(core.subscriptionEnded(todos), "ended once")
        XCTAssertEqual(core.subscriptionsReady([todos]).unknown, [todos])
    }
}
