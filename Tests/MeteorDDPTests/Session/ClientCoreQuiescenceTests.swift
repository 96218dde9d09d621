import EJSON
import XCTest

@testable import MeteorDDP

/// Quiescence as event scripts for ``ClientCore``: events in, the hold to apply (or the limit to report) out. No
/// client, queue or clock.
final class ClientCoreQuiescenceTests: XCTestCase {
    private func added(_ id: String) -> IncomingMessage {
        .message(.added(collection: "todos", id: id, fields: ["text": .string(id)]))
    }

    private func names(_ hold: QuiescenceHold?) -> [String] {
        hold?.messages.map { message in
            if case .message(.added(_, let id, _)) = message { return "added \(id)" }
            return message.name
        } ?? []
    }

    func testAfterAReconnectDataIsHeldUntilRevivedSubscriptionsAreReadyAndResentMethodsUpdated() {
        var core = ClientCore.scripted()
        let todos = core.subscribe("todos")
        let lists = core.subscribe("lists")
        let pending = core.call("todos.add")
        XCTAssertNil(core.reconnect(), "two subscriptions and a re-sent method are awaited")
        XCTAssertTrue(core.isHoldingForQuiescence)

        XCTAssertNil(core.holdUntilQuiescence(added("a")).quiescent)
        XCTAssertNil(core.holdUntilQuiescence(.message(.ready(subscriptionIDs: [todos]))).quiescent)
        XCTAssertNil(
            core.holdUntilQuiescence(.message(.updated(methodIDs: [pending.id]))).quiescent, "lists is not ready again")
        XCTAssertNil(core.holdUntilQuiescence(added("b")).quiescent)
        let outcome = core.holdUntilQuiescence(.message(.ready(subscriptionIDs: [lists])))
        XCTAssertNil(outcome.limitReached)
        let hold = outcome.quiescent
        XCTAssertEqual(hold?.resetting, true, "the new session's data replaces the cache")
        XCTAssertEqual(names(hold), ["added a", "ready", "updated", "added b", "ready"], "in arrival order")
        XCTAssertFalse(core.isHoldingForQuiescence)
    }

    /// A call that had its result but not its data when the socket dropped is not re-sent: it completes at
    /// quiescence, and does not block it.
    func testACallWithItsResultIsNotAwaitedButCompletesAtQuiescence() {
        var core = ClientCore.scripted()
        let answered = core.call("todos.add")
        answered.result = .success(nil)
        let hold = core.reconnect()
        XCTAssertEqual(hold?.methodsVisibleAtQuiescence, [answered.id])
        XCTAssertEqual(hold?.resetting, true)
        XCTAssertEqual(names(hold), [], "nothing awaited: applied at once")
    }

    func testAWaitMethodHoldsDataUntilItsUpdatedWithoutResettingTheCache() {
        var core = ClientCore.scripted()
        let login = core.call("login", wait: true)
        XCTAssertTrue(core.isHoldingForQuiescence)
        XCTAssertNil(core.holdUntilQuiescence(added("a")).quiescent)
        let hold = core.holdUntilQuiescence(.message(.updated(methodIDs: [login.id]))).quiescent
        XCTAssertEqual(hold?.resetting, false)
        XCTAssertEqual(names(hold), ["added a", "updated"])
    }

    /// A server that never sends `ready` or `updated`: at the limit the client stops waiting, applies the hold and
    /// says how many subscriptions and methods it gave up on; later data is not held.
    func testAtTheHoldLimitTheClientStopsWaitingAndSaysForWhat() {
        var core = ClientCore.scripted(holdLimit: 3)
        core.subscribe("todos")
        core.call("todos.add")
        XCTAssertNil(core.reconnect())
        XCTAssertNil(core.holdUntilQuiescence(added("a")).quiescent)
        XCTAssertNil(core.holdUntilQuiescence(added("b")).quiescent)
        let outcome = core.holdUntilQuiescence(added("c"))
        XCTAssertEqual(outcome.limitReached?.subscriptions, 1)
        XCTAssertEqual(outcome.limitReached?.methods, 1)
        XCTAssertEqual(names(outcome.quiescent), ["added a", "added b", "added c"])
        XCTAssertFalse(core.isHoldingForQuiescence, "later data is applied as it comes")
    }

    /// The first connection (not a reconnect) of a client without a restored cache holds nothing.
    func testTheFirstConnectionHoldsNothing() {
        var core = ClientCore.scripted()
        core.subscribe("todos", ready: false)
        XCTAssertNil(core.sessionConnected(isReconnect: false, reconciling: false))
        XCTAssertFalse(core.isHoldingForQuiescence)
    }

    /// A subscription that was not ready before the reconnect is not awaited (Meteor revives only ready ones).
    func testASubscriptionNotReadyBeforeTheReconnectIsNotAwaited() {
        var core = ClientCore.scripted()
        core.subscribe("todos", ready: false)
        XCTAssertEqual(core.reconnect()?.resetting, true)
    }
}
