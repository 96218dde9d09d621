import DDPTestServer
import EJSON
import Foundation
@_spi(Testing) import MeteorDDP
import NIOConcurrencyHelpers
import XCTest

/// Deadlines against DDPTestServer, on the client's manual clock: a call past its ``MethodOptions/timeout`` fails with
/// ``MethodError/Kind/timedOut``, its stub's writes undone; the server's late run shows up as any server data does and
/// its late answer is not reported as a violation. ``Subscription/ready(timeout:)`` gives up waiting, not the
/// subscription.
final class CallDeadlineTests: XCTestCase {
    func testACallPastItsDeadlineFailsItsStubIsUndoneAndTheServersLateRunShowsUp() async throws {
        let server = DDPTestServer()
        try await server.start()
        defer { Task { try await server.stop() } }
        server.publish("items") { _ in [Cursor(collection: "items")] }
        server.method("items.add") { context in
            .string(try context.collection("items").insert(["n": 1], id: "server-made"))
        }
        server.method("noop") { _ in .null }
        let clock = ManualScheduler(start: Date())
        var configuration = DDPClient.Configuration()
        configuration.scheduler = clock
        let client = DDPClient(url: server.url, configuration: configuration)
        client.defineStub("items.add") { context in
            try context.collection("items").insert(["_id": "stub-made", "n": 1]).map(EJSONValue.string) ?? .null
        }
        let errors = client.errors
        let reported = Task { await errors.reduce(into: [DDPError]()) { $0.append($1) } }
        client.connect()
        try await client.waitUntilConnected()
        try await withTimeout(10, "ready") { try await client.subscribe("items").ready() }

        server.holdMethods(named: ["items.add"])
        var options = MethodOptions()
        options.timeout = .seconds(5)
        let outcome = NIOLockedValueBox<Result<EJSONValue?, any Error>?>(nil)
        let completed = expectation(description: "the call completed")
        _ = try client.call("items.add", options: options) { result in
            outcome.withLockedValue { $0 = result }
            completed.fulfill()
        }
        _ = await server.waitForMessage { if case .method(_, "items.add", _, _) = $0 { true } else { false } }
        client.waitUntilIdle()
        XCTAssertEqual(try client.database.collection("items").count([:]), 1, "the stub's insert shows")
        clock.advance(by: .seconds(5))
        await fulfillment(of: [completed], timeout: 10)
        guard case .failure(let error as MethodError)? = outcome.withLockedValue({ $0 }) else {
            return XCTFail("\(String(describing: outcome.withLockedValue { $0 }))")
        }
        XCTAssertEqual(error.kind, .timedOut)
        client.waitUntilIdle()
        XCTAssertEqual(try client.database.collection("items").count([:]), 0, "the stub's insert undone")

        // The server runs it after all: its insert arrives as server data, its late answer is only logged.
        server.releaseHeldMethods()
        _ = try await withTimeout(10, "a call behind the late one") { try await client.call("noop") }
        client.waitUntilIdle()
        XCTAssertEqual(
            try client.database.collection("items").find([:]).map(\.id), ["server-made"], "the cache equals the server")
        client.close()
        let violations = await reported.value.filter { $0.code == .protocolViolation }
        XCTAssertEqual(violations.map(\.description), [], "the late answer is not the server's violation")
    }

    func testReadyWithATimeoutGivesUpWaitingNotTheSubscription() async throws {
        let server = DDPTestServer()
        try await server.start()
        defer { Task { try await server.stop() } }
        server.publish("slow") { _ in [Cursor(collection: "items")] }
        server.subscriptionLatency = .seconds(600)
        let clock = ManualScheduler(start: Date())
        var configuration = DDPClient.Configuration()
        configuration.scheduler = clock
        let client = DDPClient(url: server.url, configuration: configuration)
        defer { client.close() }
        client.connect()
        try await client.waitUntilConnected()
        let subscription = client.subscribe("slow")
        let waited = Task { try await subscription.ready(timeout: .seconds(3)) }
        // The wait's timer is on the manual clock once `ready(timeout:)` has registered it.
        try await withTimeout(10, "the wait's timer") {
            while !clock.pendingDelays.contains(.seconds(3)) { await Task.yield() }
        }
        clock.advance(by: .seconds(3))
        do {
            try await withTimeout(10, "the timeout") { try await waited.value }
            XCTFail("ready within 3 s")
        } catch let error as SubscriptionTimeoutError {
            XCTAssertEqual(error.name, "slow")
            XCTAssertEqual(error.timeout, .seconds(3))
        }
        XCTAssertEqual(subscription.status, .pending, "the subscription goes on")
        XCTAssertFalse(clock.pendingDelays.contains(.seconds(3)))
    }
}
