import Dispatch
import EJSON
import Foundation
import XCTest

@_spi(Testing) @testable import MeteorDDP

/// `subscribe` inside the app's own `database.performUpdates` never waits for the client queue, which may be waiting
/// for that transaction's write lock (a stubbed call on another thread): the subscription is made once the
/// transaction commits.
final class SubscribeReentrancyTests: XCTestCase {
    /// The server answers the stubbed call made meanwhile.
    private func answerTheStubbedCall(_ harness: ClientHarness) {
        for case .method(let id, "touch", _, _) in harness.sent {
            harness.receive(.result(id: id, result: nil, error: nil))
            harness.receive(.updated(methodIDs: [id]))
        }
        harness.flushData()
    }

    private func subscriptions(_ harness: ClientHarness) -> [(id: String, name: String)] {
        harness.sent.compactMap { message in
            if case .sub(let id, let name, _) = message { (id, name) } else { nil }
        }
    }

    func testSubscribeInsidePerformUpdatesWhileAStubWaitsForTheLockDoesNotDeadlock() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let made = Locked<Subscription?>(nil)
        try harness.insideATransactionWhileAStubWaitsForTheLock {
            let subscription = harness.client.subscribe("players")
            XCTAssertEqual(subscription.status, .pending)
            made.mutate { $0 = subscription }
        }
        let subscription = try XCTUnwrap(made.value)
        let sent = subscriptions(harness)
        XCTAssertEqual(sent.map(\.name), ["players"], "sent once the transaction committed")
        XCTAssertEqual(sent.first?.id, subscription.id, "the handle's id is the one on the wire")
        let ready = expectation(description: "ready")
        subscription.whenReady { error in
            XCTAssertNil(error)
            ready.fulfill()
        }
        harness.receive(.ready(subscriptionIDs: [subscription.id]))
        // Ready waits for the data of the stubbed call still pending (Meteor's `_runWhenAllServerDocsAreFlushed`).
        answerTheStubbedCall(harness)
        wait(for: [ready], timeout: 5)
        XCTAssertTrue(subscription.isReady)
    }

    func testJoiningASharedSubscriptionInsidePerformUpdatesTakesItsIdAndStatus() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let first = harness.client.subscribe("players", params: [1])
        harness.receive(.ready(subscriptionIDs: [first.id]))
        harness.flushData()
        XCTAssertTrue(first.isReady)
        let made = Locked<Subscription?>(nil)
        try harness.insideATransactionWhileAStubWaitsForTheLock {
            made.mutate { $0 = harness.client.subscribe("players", params: [1]) }
        }
        let joined = try XCTUnwrap(made.value)
        XCTAssertEqual(joined.id, first.id, "bound to the existing subscription")
        XCTAssertTrue(joined.isReady, "a joined subscription's status")
        XCTAssertEqual(subscriptions(harness).count, 1, "no second sub")
        // The joined handle follows the shared subscription from now on: a nosub ends both.
        let ended = expectation(description: "the joined handle's waiter sees the end")
        let updates = joined.statusUpdates
        let statuses = Locked<[SubscriptionStatus]>([])
        Task {
            for await status in updates { statuses.mutate { $0.append(status) } }
            ended.fulfill()
        }
        harness.receive(.nosub(id: first.id, error: MeteorError(error: .number(403), reason: "no")))
        wait(for: [ended], timeout: 5)
        XCTAssertEqual(statuses.value.first, .ready)
        guard case .failed = statuses.value.last else { return XCTFail("ended with \(statuses.value)") }
        guard case .failed = joined.status else { return XCTFail("joined handle: \(joined.status)") }
    }

    func testAHandleStoppedInsideItsTransactionIsNeverSubscribed() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let made = Locked<Subscription?>(nil)
        try harness.insideATransactionWhileAStubWaitsForTheLock {
            let subscription = harness.client.subscribe("players")
            subscription.stop()
            made.mutate { $0 = subscription }
        }
        let subscription = try XCTUnwrap(made.value)
        XCTAssertTrue(subscriptions(harness).isEmpty)
        XCTAssertEqual(subscription.status, .stopped)
        let stopped = expectation(description: "ready() throws")
        Task {
            do {
                try await subscription.ready()
            } catch {
                XCTAssertTrue(error is SubscriptionStoppedError, "\(error)")
                stopped.fulfill()
            }
        }
        wait(for: [stopped], timeout: 5)
    }

    func testCallsAndSubscriptionsInsideATransactionGoOutInTheOrderTheyWereMade() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        try harness.insideATransactionWhileAStubWaitsForTheLock {
            _ = try? harness.client.call("first") { _ in }
            _ = harness.client.subscribe("players")
            _ = try? harness.client.call("second") { _ in }
        }
        let names = harness.sent.compactMap { message -> String? in
            switch message {
            case .method(_, let name, _, _): name
            case .sub(_, let name, _): "sub \(name)"
            default: nil
            }
        }
        XCTAssertEqual(names, ["touch", "first", "sub players", "second"])
    }
}
