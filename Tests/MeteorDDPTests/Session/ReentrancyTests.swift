import EJSON
import Foundation
import XCTest

@testable import MeteorDDP

/// User code never runs on the client queue, so it may call back into the client from any callback.
final class ReentrancyTests: XCTestCase {
    func testAWaiterOfAStoppedSubscriptionMaySubscribeAgain() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let again = expectation(description: "re-subscribed from the waiter")
        let onClientQueue = Locked<Bool?>(nil)
        let client = harness.client
        let first = client.subscribe("players", notInUseTimeout: .zero)
        first.whenReady { error in
            XCTAssertTrue(error is SubscriptionStoppedError)
            onClientQueue.mutate { $0 = client.isOnClientQueue }
            let second = client.subscribe("players", notInUseTimeout: .zero)
            XCTAssertEqual(second.status, .pending)
            second.stop()
            again.fulfill()
        }
        first.stop()
        wait(for: [again], timeout: 5)
        XCTAssertEqual(onClientQueue.value, false)
    }

    func testAStatusObserverRunsOffTheClientQueueAndMayCallTheClient() throws {
        let harness = ClientHarness()
        let client = harness.client
        let connected = expectation(description: "connected observed")
        let seen = Locked<(onClientQueue: Bool, version: DDPVersion?)?>(nil)
        let observer = NotificationCenter.default.addObserver(
            forName: .ddpClientStatusDidChange, object: client, queue: nil
        ) { note in
            guard let status = note.userInfo?[DDPClient.statusUserInfoKey] as? ConnectionStatus, status.isConnected
            else { return }
            seen.mutate { $0 = (client.isOnClientQueue, client.negotiatedVersion) }
            let sub = client.subscribe("from-observer")
            _ = try? client.call("fromObserver") { _ in }
            sub.stop()
            connected.fulfill()
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        harness.establishConnection()
        wait(for: [connected], timeout: 5)
        XCTAssertEqual(seen.value?.onClientQueue, false)
        XCTAssertEqual(seen.value?.version, .v1)
        harness.settle()
        XCTAssertTrue(harness.sent.contains { if case .sub(_, "from-observer", _) = $0 { true } else { false } })
    }
}

/// A call made inside the app's own database transaction does not wait for a client queue that waits for that
/// transaction's lock.
final class CallInsideATransactionTests: XCTestCase {
    func testACallInsidePerformUpdatesWhileAStubWaitsForTheLockDoesNotDeadlock() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let client = harness.client
        let completed = expectation(description: "the call made inside the transaction completed")
        try harness.insideATransactionWhileAStubWaitsForTheLock {
            let value = try? client.call("inner") { result in
                if case .success = result { completed.fulfill() }
            }
            XCTAssertNil(value, "made after the transaction commits")
        }
        harness.settle()
        let sentMethods = harness.sent.compactMap { message -> (id: String, name: String)? in
            if case .method(let id, let name, _, _) = message { (id, name) } else { nil }
        }
        XCTAssertEqual(sentMethods.map(\.name), ["touch", "inner"], "the inner call went out after the transaction")
        // The inner call completes once both methods' data is visible (Meteor waits for every stub's documents).
        for (id, _) in sentMethods {
            harness.receive(.result(id: id, result: nil, error: nil))
            harness.receive(.updated(methodIDs: [id]))
        }
        harness.flushData()
        wait(for: [completed], timeout: 5)
    }
}
