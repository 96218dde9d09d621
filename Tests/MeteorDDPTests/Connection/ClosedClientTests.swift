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
            _ = try await withTimeout(5, "a call on a closed client") { try await harness.client.call("m", params: [1]) }
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
            if case .failure(let error) = result, error.kind == .clientClosed, onCallbackQueue {
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
}
