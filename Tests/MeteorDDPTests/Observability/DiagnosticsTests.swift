import EJSON
import Foundation
import XCTest

@testable import MeteorDDP

/// `client.diagnostics()`: each field of the snapshot, as a session goes.
final class DiagnosticsTests: XCTestCase {
    func testTheConnectionAndItsSession() async {
        let harness = ClientHarness()
        var diagnostics = await harness.client.diagnostics()
        XCTAssertEqual(
            diagnostics.connection,
            .init(state: "offline", sessionID: nil, sessionStart: nil, version: nil, retryCount: 0))
        harness.establishConnection()
        diagnostics = await harness.client.diagnostics()
        XCTAssertEqual(
            diagnostics.connection,
            .init(state: "connected", sessionID: "SESSION-1", sessionStart: "new", version: "1", retryCount: 0))
    }

    func testTheLastErrorsAreKeptUpToTheLimit() async {
        let harness = ClientHarness()
        harness.establishConnection()
        for n in 0..<20 { harness.receive(frame: #"{"msg":"added","id":"\#(n)"}"#) }
        harness.settle()
        let errors = await harness.client.diagnostics().recentErrors
        XCTAssertEqual(errors.count, ClientDiagnostics.recentErrorLimit)
        XCTAssertEqual(Set(errors.map(\.code)), ["protocolViolation"])
        XCTAssertTrue(errors.first?.message.contains(#""id":"4""#) ?? false, "the oldest four were dropped")
        XCTAssertTrue(errors.last?.message.contains(#""id":"19""#) ?? false)
    }

    func testSubscriptionsShowTheirStatusAndTimeToReadyButNotTheirParameters() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let players = harness.client.subscribe("players", params: [1, "s3cr3t"])
        let todos = harness.client.subscribe("todos")
        harness.settle()
        var subscriptions = await harness.client.diagnostics().subscriptions
        XCTAssertEqual(subscriptions.map(\.name), ["players", "todos"])
        XCTAssertEqual(subscriptions.map(\.status), ["pending", "pending"])
        XCTAssertEqual(subscriptions.first?.parameterCount, 2)
        XCTAssertNil(subscriptions.first?.millisecondsToReady)
        harness.receive(.ready(subscriptionIDs: [players.id]))
        harness.settle()
        let diagnostics = await harness.client.diagnostics()
        subscriptions = diagnostics.subscriptions
        XCTAssertEqual(subscriptions.map(\.status), ["ready", "pending"])
        XCTAssertNotNil(subscriptions.first?.millisecondsToReady)
        let json = String(decoding: try JSONEncoder().encode(diagnostics), as: UTF8.self)
        XCTAssertFalse(json.contains("s3cr3t"), "parameters are never shown")
        XCTAssertEqual(subscriptions.map(\.handles), [1, 1])
        // Stopped, it waits out its not-in-use time (Meteor's delayed unsubscribe), then goes.
        todos.stop()
        harness.settle()
        var remaining = await harness.client.diagnostics().subscriptions
        XCTAssertEqual(remaining.map(\.handles), [1, 0])
        harness.advance(by: .seconds(180))
        harness.settle()
        remaining = await harness.client.diagnostics().subscriptions
        XCTAssertEqual(remaining.map(\.name), ["players"])
    }

    func testPendingCallsShowTheirPhaseAndTheLatencyIsMeasured() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        var waitFirst = MethodOptions()
        waitFirst.wait = true
        _ = try harness.client.call("first", options: waitFirst) { _ in }
        _ = try harness.client.call("second") { _ in }
        harness.settle()
        var calls = await harness.client.diagnostics().pendingCalls
        XCTAssertEqual(calls.map(\.name), ["first", "second"])
        XCTAssertEqual(calls.map(\.phase), ["sent", "queued"], "the second waits behind the wait call")
        let latencyBefore = await harness.client.diagnostics().optimisticUpdateLatency
        XCTAssertNil(latencyBefore)
        harness.receive(.updated(methodIDs: ["1"]))
        harness.settle()
        calls = await harness.client.diagnostics().pendingCalls
        XCTAssertEqual(calls.first?.phase, "updated")
        harness.receive(.result(id: "1", result: nil, error: nil))
        harness.flushData()
        calls = await harness.client.diagnostics().pendingCalls
        XCTAssertEqual(calls.map(\.name), ["second"])
        XCTAssertEqual(calls.map(\.phase), ["sent"])
        harness.receive(.result(id: "2", result: 1, error: nil))
        harness.settle()
        calls = await harness.client.diagnostics().pendingCalls
        XCTAssertEqual(calls.map(\.phase), ["result"])
        harness.receive(.updated(methodIDs: ["2"]))
        harness.flushData()
        let diagnostics = await harness.client.diagnostics()
        XCTAssertEqual(diagnostics.pendingCalls, [])
        XCTAssertEqual(diagnostics.queues.pendingCalls, 0)
        XCTAssertEqual(diagnostics.optimisticUpdateLatency?.samples, 2)
        XCTAssertLessThanOrEqual(
            diagnostics.optimisticUpdateLatency?.p50Milliseconds ?? .infinity,
            diagnostics.optimisticUpdateLatency?.p95Milliseconds ?? 0)
    }

    /// A call made while no session is connected has not gone out: `queued`, however Meteor's bookkeeping files it.
    func testACallMadeOfflineIsQueued() async throws {
        let harness = ClientHarness()
        _ = try harness.client.call("offline") { _ in }
        harness.settle()
        var calls = await harness.client.diagnostics().pendingCalls
        XCTAssertEqual(calls.map(\.phase), ["queued"])
        harness.establishConnection()
        calls = await harness.client.diagnostics().pendingCalls
        XCTAssertEqual(calls.map(\.phase), ["sent"])
    }

    /// Nearest-rank percentiles: the smallest sample with at least p of the samples at or below it.
    func testThePercentilesAreTheNearestRank() {
        XCTAssertEqual(
            DDPClient.latency(of: [4, 1, 3, 2]),
            ClientDiagnostics.Latency(p50Milliseconds: 2, p95Milliseconds: 4, samples: 4))
        let hundred = DDPClient.latency(of: (1...100).map(Double.init))
        XCTAssertEqual(hundred?.p50Milliseconds, 50)
        XCTAssertEqual(hundred?.p95Milliseconds, 95)
        XCTAssertNil(DDPClient.latency(of: [Double]()))
    }

    func testCollectionsAndHeldMessagesAreCounted() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let players = harness.client.subscribe("players")
        harness.receive(.added(collection: "players", id: "a", fields: [:]))
        harness.receive(.added(collection: "players", id: "b", fields: [:]))
        harness.receive(.added(collection: "teams", id: "t", fields: [:]))
        harness.receive(.ready(subscriptionIDs: [players.id]))
        harness.flushData()
        var diagnostics = await harness.client.diagnostics()
        XCTAssertEqual(
            diagnostics.collections, [.init(name: "players", documents: 2), .init(name: "teams", documents: 1)])
        XCTAssertEqual(diagnostics.queues.heldForQuiescence, 0)
        // After a reconnect, data waits until the revived subscription is ready again.
        harness.dropAndReopen()
        harness.receive(.connected(session: "SESSION-2"))
        harness.receive(.added(collection: "players", id: "a", fields: ["n": 1]))
        harness.settle()
        diagnostics = await harness.client.diagnostics()
        XCTAssertEqual(diagnostics.queues.heldForQuiescence, 1)
        XCTAssertEqual(diagnostics.connection.sessionID, "SESSION-2")
        // The whole snapshot goes to JSON and back.
        let decoded = try JSONDecoder().decode(ClientDiagnostics.self, from: JSONEncoder().encode(diagnostics))
        XCTAssertEqual(decoded, diagnostics)
    }

    /// With the offline store: the calls it keeps, and the document changes waiting for its writer (held here by a
    /// store whose writes wait).
    func testTheOfflineStoresQueuesAreCounted() async throws {
        let store = ScriptedClientStore(gated: true)
        let harness = ClientHarness { $0.persistence = .store(store) }
        harness.establishConnection()
        harness.receive(.added(collection: "players", id: "a", fields: [:]))
        harness.flushData()
        XCTAssertTrue(store.gate!.waitForAWriter(), "the writer took the first change and waits on the gate")
        harness.receive(.added(collection: "players", id: "b", fields: [:]))
        harness.flushData()
        _ = try harness.client.call("kept") { _ in }
        harness.settle()
        let waiting = await harness.client.diagnostics()
        XCTAssertEqual(waiting.queues.storedOffline, 1)
        XCTAssertGreaterThanOrEqual(waiting.queues.changesWaitingForDisk, 1, "the writer waits on the gate")
        store.gate!.open()
        harness.client.waitUntilPersisted()
        harness.receive(.result(id: "1", result: nil, error: nil))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.flushData()
        harness.client.waitUntilPersisted()
        let written = await harness.client.diagnostics()
        XCTAssertEqual(written.queues.storedOffline, 0, "completed: the store dropped it")
        XCTAssertEqual(written.queues.changesWaitingForDisk, 0)
    }
}
