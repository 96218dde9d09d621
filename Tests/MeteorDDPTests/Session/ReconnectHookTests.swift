import Dispatch
import EJSON
import XCTest

@testable import MeteorDDP

/// The app's `onReconnect` hooks run on the callback queue, never on the client queue or the socket's thread, and the
/// new session still goes in Meteor's order: the hooks' calls, then the re-sent methods, then subscriptions.
final class ReconnectHookTests: XCTestCase {
    /// A hook that blocks until the test lets it go (on the callback queue, so the test must not settle meanwhile).
    final class BlockingHook: Sendable {
        let started = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)

        func run() {
            started.signal()
            proceed.wait()
        }
    }

    /// Whether the client queue runs a block within 5 s (a hook running on it would hold it).
    static func clientQueueIsFree(_ client: DDPClient) -> Bool {
        let ran = DispatchSemaphore(value: 0)
        client.queue.async { ran.signal() }
        return ran.wait(timeout: .now() + 5) == .success
    }

    func testHooksRunOffTheClientQueue() {
        let harness = ClientHarness()
        harness.establishConnection()
        let client = harness.client
        let onClientQueue = Locked<[Bool]>([])
        client.onReconnect("where") { onClientQueue.mutate { $0.append(client.isOnClientQueue) } }
        harness.dropAndReopen()
        XCTAssertEqual(onClientQueue.value, [false])
    }

    func testASlowHookNeverHoldsUpTheSocketsThread() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let hook = BlockingHook()
        harness.client.onReconnect("slow") { hook.run() }
        harness.settle()
        harness.transport.fail()
        harness.settle()
        harness.advance(by: .milliseconds(10))

        // The socket's thread opens the socket and delivers frames while the hook blocks: each returns.
        let delivered = expectation(description: "the socket's thread delivered everything")
        DispatchQueue.global().async {
            harness.transport.open()
            harness.transport.receive(.connected(session: "SESSION-2"))
            harness.transport.receive(.added(collection: "players", id: "a", fields: [:]))
            delivered.fulfill()
        }
        XCTAssertEqual(hook.started.wait(timeout: .now() + 5), .success, "the hook ran")
        wait(for: [delivered], timeout: 5)
        XCTAssertFalse(harness.client.status.isConnected, "`connected` waits for the hook")
        XCTAssertTrue(Self.clientQueueIsFree(harness.client), "the client queue is free while the hook runs")
        hook.proceed.signal()
        harness.settle()
        XCTAssertTrue(harness.client.status.isConnected)
    }

    func testTheHooksCallsGoOutBeforeReSentMethodsAndSubscriptionsOnce() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let client = harness.client
        let players = client.subscribe("players")
        _ = try client.call("pending") { _ in }
        let hook = BlockingHook()
        client.onReconnect("first") {
            _ = try? client.call("reauth") { _ in }
            _ = client.subscribe("fromHook")
            hook.run()
        }
        harness.settle()
        harness.transport.fail()
        harness.settle()
        harness.transport.clearSentFrames()
        harness.advance(by: .milliseconds(10))
        DispatchQueue.global().async { harness.transport.open() }
        XCTAssertEqual(hook.started.wait(timeout: .now() + 5), .success, "the hook ran")
        XCTAssertTrue(Self.clientQueueIsFree(client), "the client queue is free while the hook runs")
        XCTAssertEqual(
            harness.sent.map(\.name), ["connect", "method", "sub"], "only `connect` and what the hook sent so far")
        hook.proceed.signal()
        harness.settle()
        let sent = harness.sent.map { message -> String in
            switch message {
            case .method(_, let name, _, _): "method " + name
            case .sub(_, let name, _): "sub " + name
            default: message.name
            }
        }
        XCTAssertEqual(
            sent, ["connect", "method reauth", "sub fromHook", "method pending", "sub players"],
            "the hook's calls first, then re-sent methods, then subscriptions not sent yet (each once)")
        players.stop()
    }

    func testMessagesHeldWhileAHookRunsAreBoundedAndTheResetGoesOn() async throws {
        let harness = ClientHarness { $0.maxMessagesHeldForQuiescence = 10 }
        harness.establishConnection()
        let client = harness.client
        _ = try client.call("pending") { _ in }
        let hook = BlockingHook()
        client.onReconnect("stuck") { hook.run() }
        defer { hook.proceed.signal() }
        harness.settle()
        let errors = client.errors
        let limitReported = Task { await errors.first { $0.code == .limitReached } }
        harness.transport.fail()
        harness.settle()
        harness.transport.clearSentFrames()
        harness.advance(by: .milliseconds(10))
        let flooded = expectation(description: "the flood was delivered")
        DispatchQueue.global().async {
            harness.transport.open()
            harness.transport.receive(.connected(session: "SESSION-2"))
            for index in 0..<20 {
                harness.transport.receive(.added(collection: "players", id: "p\(index)", fields: [:]))
            }
            flooded.fulfill()
        }
        XCTAssertEqual(hook.started.wait(timeout: .now() + 5), .success, "the hook ran")
        await fulfillment(of: [flooded], timeout: 5)
        let reported = try await value(of: limitReported, within: 5)
        XCTAssertEqual(reported?.code, .limitReached)
        // The client stopped waiting for the stuck hook: the re-sent method is out and the held messages were handled.
        XCTAssertTrue(Self.clientQueueIsFree(client), "the client queue is free while the hook runs")
        XCTAssertTrue(harness.sent.contains { if case .method(_, "pending", _, _) = $0 { true } else { false } })
        XCTAssertTrue(client.status.isConnected)
        hook.proceed.signal()
        harness.flushData()
        XCTAssertEqual(client.database.collection("players").count, 20, "nothing held was lost")
    }
}
