import Dispatch
import EJSON
import XCTest

@testable import MeteorDDP

/// ``DDPClient/close()`` is for good: what is asked of a closed client afterwards fails at once, as the work pending at
/// the close did, and nothing connects it again. (Before, a call made after the close waited forever for an answer
/// that could not come, a subscription's `ready()` likewise, and `connect()` opened a new socket.)
final class ClosedClientTests: XCTestCase {
    private static let callbackQueueKey = DispatchSpecificKey<Int>()

    /// A connected client, closed (the close has run), its sent frames cleared.
    private func closedHarness() -> ClientHarness {
        let harness = ClientHarness()
        harness.establishConnection()
        harness.client.close()
        harness.settle()
        harness.transport.clearSentFrames()
        return harness
    }

    func testACallOnAClosedClientFailsWithClientClosed() async throws {
        let harness = closedHarness()
        do {
            _ = try await withTimeout(5, "a call on a closed client") {
                try await harness.client.call("m", params: [1])
            }
            XCTFail("must throw")
        } catch {
            XCTAssertEqual((error as? MethodError)?.kind, .clientClosed, "\(error)")
        }
        harness.settle()
        XCTAssertEqual(harness.transport.sentFrames, [])
    }

    func testACallbackCallOnAClosedClientCompletesWithClientClosedOnTheCallbackQueue() throws {
        let harness = closedHarness()
        harness.client.callbackQueue.setSpecific(key: Self.callbackQueueKey, value: 1)
        let completed = expectation(description: "completion with clientClosed, on the callback queue")
        try harness.client.call("m") { result in
            let onCallbackQueue = DispatchQueue.getSpecific(key: Self.callbackQueueKey) == 1
            if case .failure(let error as MethodError) = result, error.kind == .clientClosed, onCallbackQueue {
                completed.fulfill()
            } else {
                XCTFail("\(result), on the callback queue: \(onCallbackQueue)")
            }
        }
        wait(for: [completed], timeout: 5)
    }

    func testASubscriptionOnAClosedClientIsStopped() async throws {
        let harness = closedHarness()
        let subscription = harness.client.subscribe("lists")
        do {
            try await withTimeout(5, "ready() of a subscription on a closed client") { try await subscription.ready() }
            XCTFail("must throw")
        } catch {
            XCTAssertTrue(error is SubscriptionStoppedError, "\(error)")
        }
        harness.settle()
        XCTAssertEqual(harness.transport.sentFrames, [])
    }

    func testAClosedClientDoesNotConnectAgain() {
        let harness = closedHarness()
        let attempts = harness.transport.connectionAttempts
        harness.client.connect()
        harness.client.reconnect()
        harness.client.networkDidBecomeReachable()
        harness.settle()
        harness.advance(by: .seconds(600))
        XCTAssertEqual(harness.transport.connectionAttempts, attempts)
        XCTAssertEqual(harness.client.status.state, .offline)
    }

    // MARK: - What a closed client still shows or stores

    /// Before, an iteration of `restoredCalls` waited forever for the outcome of a call the close cut short.
    func testRestoredCallsEndWhenTheClientCloses() async throws {
        let store = ScriptedClientStore(
            StoredState(
                methods: [
                    StoredMethod(
                        id: "1", name: "addTodo", params: ["milk"], randomSeed: "s", wait: false, noRetry: false)
                ]))
        let harness = ClientHarness { $0.persistence = .store(store) }
        harness.establishConnection()
        let iterating = expectation(description: "iterating the restored calls")
        let before = Task { () -> Int in
            var iterator = harness.client.restoredCalls.makeAsyncIterator()
            iterating.fulfill()
            var outcomes = 0
            while await iterator.next() != nil { outcomes += 1 }
            return outcomes
        }
        await fulfillment(of: [iterating], timeout: 5)
        harness.client.close()
        let outcomesBefore = try await withTimeout(5, "an iteration started before the close to end") {
            await before.value
        }
        XCTAssertEqual(outcomesBefore, 0)
        let outcomesAfter = try await withTimeout(5, "an iteration started after the close to end") {
            var outcomes = 0
            for await _ in harness.client.restoredCalls { outcomes += 1 }
            return outcomes
        }
        XCTAssertEqual(outcomesAfter, 0)
        harness.client.waitUntilPersisted()
        XCTAssertEqual(store.stored.methods.map(\.id), ["1"], "cut short by the close: sent again at the next launch")
    }

    /// Before, a stream made after the close ended at once, without the value it promises to start with.
    func testAccountAndStatusStreamsMadeAfterTheCloseStartWithTheValueNow() async throws {
        let harness = ClientHarness {
            $0.accountStore = InMemoryAccountStore(Account(userID: "lovelace", token: "stored", tokenExpires: nil))
        }
        harness.establishConnection()
        harness.client.close()
        harness.settle()
        let accounts = try await withTimeout(5, "accountUpdates made after the close") {
            var seen: [String?] = []
            for await account in harness.client.accountUpdates { seen.append(account?.userID) }
            return seen
        }
        XCTAssertEqual(accounts, ["lovelace"])
        let statuses = try await withTimeout(5, "statusUpdates made after the close") {
            var seen: [ConnectionStatus.State] = []
            for await status in harness.client.statusUpdates { seen.append(status.state) }
            return seen
        }
        XCTAssertEqual(statuses, [.offline])
    }

    /// Before, logout() on a closed client threw and kept the account, here and in the store: the next launch
    /// resumed it.
    func testLogoutOnAClosedClientForgetsTheAccountHereAndSaysTheServerWasNotTold() async throws {
        let store = InMemoryAccountStore(Account(userID: "lovelace", token: "stored", tokenExpires: nil))
        let harness = ClientHarness { $0.accountStore = store }
        harness.establishConnection()
        harness.client.close()
        harness.settle()
        do {
            try await withTimeout(5, "logout on a closed client") { try await harness.client.logout() }
            XCTFail("must throw: the server was not told")
        } catch {
            XCTAssertEqual((error as? MethodError)?.kind, .clientClosed, "\(error)")
        }
        XCTAssertNil(harness.client.account)
        XCTAssertNil(try store.load())
    }

    /// Before, close() stopping the subscriptions was written to the store as the app's doing: the next launch
    /// waited for none of them.
    func testAClosedClientKeepsItsSubscriptionsInTheStoreForTheNextLaunch() {
        let store = ScriptedClientStore()
        let harness = ClientHarness { $0.persistence = .store(store) }
        harness.establishConnection()
        let subscription = harness.client.subscribe("lists")
        harness.client.waitUntilPersisted()
        XCTAssertEqual(store.stored.subscriptions.map(\.name), ["lists"])
        harness.client.close()
        harness.settle()
        harness.transport.receive(.ping(id: "after")) // whatever still arrives is drained: nothing is written
        harness.client.waitUntilPersisted()
        XCTAssertEqual(store.stored.subscriptions.map(\.name), ["lists"])
        withExtendedLifetime(subscription) {}
    }
}
