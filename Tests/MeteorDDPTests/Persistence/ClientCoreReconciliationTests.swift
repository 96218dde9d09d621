import EJSON
import XCTest

@testable import MeteorDDP

/// The offline store's reconciliation as event scripts for ``ClientCore``: what the first connection after a restart
/// waits for, what the store is given, and when restored calls are judged. No client, store, queue or clock.
final class ClientCoreReconciliationTests: XCTestCase {
    private let userCode = UserCodeQueue(label: "ClientCoreReconciliationTests")
    private let todos = StoredSubscription(name: "todos", params: [])
    private let lists = StoredSubscription(name: "lists", params: [])

    private func subscribe(_ core: inout ClientCore, _ name: String) -> String {
        core.subscribe(name: name, params: [], notInUseTimeout: .zero, userCode: userCode) { "id-\(name)" }.record.id
    }

    private func effect(_ id: String) -> [StoredStubEffect] {
        [StoredStubEffect(key: DocumentKey(collectionName: "todos", documentID: id), set: ["text": .string(id)])]
    }

    /// The first connection waits for the app's subscriptions and for the restored ones not made again until the
    /// delay elapses; then the held data replaces the restored cache, once.
    func testTheFirstConnectionWaitsForRestoredSubscriptionsUntilTheDelay() {
        var core = ClientCore.scripted()
        core.restored(subscriptions: [todos, lists], stubEffects: [:], hasState: true)
        let made = subscribe(&core, "todos")
        let start = core.startReconciliationIfPending()
        XCTAssertTrue(start.reconciling)
        XCTAssertTrue(start.armDelay, "lists was not made again: awaited until the delay")
        XCTAssertNil(core.sessionConnected(isReconnect: false, reconciling: true))
        XCTAssertNil(core.holdUntilQuiescence(.message(.ready(subscriptionIDs: [made]))).quiescent)
        let hold = core.reconciliationDelayElapsed()
        XCTAssertEqual(hold?.resetting, true, "the server's data replaces the restored cache")
        XCTAssertTrue(core.reconciliationApplied())
        XCTAssertFalse(core.reconciliationApplied(), "reconciled once")
        XCTAssertEqual(core.startReconciliationIfPending().reconciling, false, "a later connection is a reconnect")
    }

    func testWithEveryRestoredSubscriptionMadeAgainNoDelayIsArmed() {
        var core = ClientCore.scripted()
        core.restored(subscriptions: [todos], stubEffects: [:], hasState: true)
        _ = subscribe(&core, "todos")
        XCTAssertEqual(core.startReconciliationIfPending().armDelay, false)
    }

    func testNothingRestoredNothingToReconcile() {
        var core = ClientCore.scripted()
        core.restored(subscriptions: [], stubEffects: [:], hasState: false)
        XCTAssertEqual(core.startReconciliationIfPending().reconciling, false)
    }

    /// Until the first connection reconciles, the store keeps the restored subscriptions the app has not made again
    /// (a restart before then must not forget them); after it, the app's alone. It is given a list only when it
    /// changed, never after close.
    func testTheStoreIsGivenTheSubscriptionsWhenTheyChange() {
        var core = ClientCore.scripted()
        core.restored(subscriptions: [todos, lists], stubEffects: [:], hasState: true)
        _ = subscribe(&core, "todos")
        XCTAssertNil(core.subscriptionsToStore(), "todos and lists, as stored")
        _ = core.startReconciliationIfPending()
        _ = core.sessionConnected(isReconnect: false, reconciling: true)
        _ = core.reconciliationDelayElapsed()
        XCTAssertEqual(core.subscriptionsToStore(), [todos], "lists was not made again")
        XCTAssertNil(core.subscriptionsToStore(), "unchanged")
        _ = subscribe(&core, "lists")
        XCTAssertEqual(core.subscriptionsToStore(), [todos, lists])
        _ = core.close()
        XCTAssertNil(core.subscriptionsToStore(), "close stops the subscriptions here, not in the app")
    }

    func testAfterALogoutErasedThemTheStoreGetsSubscriptionsOnlyWhenTheAppsChange() {
        var core = ClientCore.scripted()
        core.restored(subscriptions: [], stubEffects: [:], hasState: false)
        _ = subscribe(&core, "todos")
        XCTAssertEqual(core.subscriptionsToStore(), [todos])
        core.storedSubscriptionsErased()
        XCTAssertNil(core.subscriptionsToStore(), "todos was the last user's")
        _ = subscribe(&core, "lists")
        XCTAssertEqual(core.subscriptionsToStore(), [todos, lists])
    }

    /// A restored call is judged when it completes; if the server's data for it may still be on its way (a
    /// subscription is not ready), once every subscription is ready, in call order; at once when the client closes.
    func testRestoredCallsAreJudgedOnceTheSubscriptionsDataArrived() {
        var core = ClientCore.scripted()
        core.restored(subscriptions: [], stubEffects: ["2": effect("b"), "10": effect("j")], hasState: true)
        XCTAssertEqual(core.restoredCallCompleted("2"), effect("b"))
        XCTAssertNil(core.restoredCallCompleted("2"), "judged once")
        XCTAssertNil(core.restoredCallCompleted("3"), "not a restored call")
        XCTAssertFalse(core.judgeWhenServerDataArrives("2", effect("b")), "no subscription on its way: judged now")

        let made = subscribe(&core, "todos")
        XCTAssertTrue(core.judgeWhenServerDataArrives("10", effect("j")))
        XCTAssertTrue(core.judgeWhenServerDataArrives("2", effect("b")))
        XCTAssertTrue(core.restoredCallsAwaitServerData)
        XCTAssertTrue(core.restoredCallsToJudge(force: false).isEmpty, "todos is not ready")
        _ = core.subscriptionsReady([made])
        XCTAssertEqual(core.restoredCallsToJudge(force: false).map(\.id), ["2", "10"], "in call order")
        XCTAssertFalse(core.restoredCallsAwaitServerData)

        _ = subscribe(&core, "lists")
        XCTAssertTrue(core.judgeWhenServerDataArrives("10", effect("j")))
        XCTAssertEqual(core.restoredCallsToJudge(force: true).map(\.id), ["10"], "closing: judged as things are")
    }
}
