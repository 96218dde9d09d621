import EJSON
import MetricsTestKit
import XCTest

@testable import MeteorDDP

/// The client's swift-metrics, recorded by swift-metrics' own test backend while a session runs: connect, a
/// subscription, calls, a protocol violation, a reconnect.
final class ClientMetricsTests: XCTestCase {
    private func harness(_ metrics: TestMetrics, label: String? = nil) -> ClientHarness {
        ClientHarness {
            $0.metricsFactory = metrics
            $0.metricsLabel = label
        }
    }

    func testASessionEmitsTheDocumentedMetrics() throws {
        let metrics = TestMetrics()
        let harness = harness(metrics)
        harness.establishConnection()
        XCTAssertEqual(metrics.counterTotal(label: "meteor_ddp_connection_attempts_total"), 1)
        XCTAssertEqual(try metrics.expectCounter("meteor_ddp_sessions_total", [("start", "new")]).totalValue, 1)
        XCTAssertEqual(metrics.counterTotal(label: "meteor_ddp_reconnects_total"), 0)

        // A subscription: active, then ready.
        let subscription = harness.client.subscribe("players")
        harness.settle()
        XCTAssertEqual(try metrics.expectMeter("meteor_ddp_subscriptions_active").lastValue, 1)
        harness.receive(.ready(subscriptionIDs: [subscription.id]))
        harness.settle()
        XCTAssertEqual(try metrics.expectTimer("meteor_ddp_subscription_ready_duration").values.count, 1)

        // Two calls: one answered (result, then updated), one refused by the server.
        _ = try harness.client.call("answered") { _ in }
        _ = try harness.client.call("refused") { _ in }
        harness.settle()
        XCTAssertEqual(metrics.counterTotal(label: "meteor_ddp_calls_started_total"), 2)
        XCTAssertEqual(try metrics.expectMeter("meteor_ddp_calls_pending").lastValue, 2)
        harness.receive(.result(id: "1", result: 42, error: nil))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.receive(.result(id: "2", result: nil, error: MeteorError(error: .number(403), reason: "no")))
        harness.receive(.updated(methodIDs: ["2"]))
        harness.flushData()
        XCTAssertEqual(
            try metrics.expectCounter("meteor_ddp_calls_completed_total", [("outcome", "result")]).totalValue, 1)
        XCTAssertEqual(
            try metrics.expectCounter("meteor_ddp_calls_completed_total", [("outcome", "error")]).totalValue, 1)
        XCTAssertEqual(try metrics.expectTimer("meteor_ddp_call_result_duration").values.count, 2)
        XCTAssertEqual(try metrics.expectTimer("meteor_ddp_call_updated_duration").values.count, 2)
        XCTAssertEqual(try metrics.expectMeter("meteor_ddp_calls_pending").lastValue, 0)

        // A frame that is no DDP message.
        harness.receive(frame: #"{"msg":"added","id":"1"}"#)
        harness.settle()
        XCTAssertEqual(
            try metrics.expectCounter("meteor_ddp_protocol_violations_total", [("kind", "missing_field")]).totalValue, 1
        )

        // Frames both ways, counted with their bytes.
        let sentFrames = harness.transport.sentFrames
        XCTAssertEqual(metrics.counterTotal(label: "meteor_ddp_frames_sent_total"), Int64(sentFrames.count))
        XCTAssertEqual(
            metrics.counterTotal(label: "meteor_ddp_bytes_sent_total"),
            Int64(sentFrames.reduce(0) { $0 + $1.utf8.count }))
        XCTAssertGreaterThanOrEqual(metrics.counterTotal(label: "meteor_ddp_frames_received_total"), 6)
        XCTAssertGreaterThan(metrics.counterTotal(label: "meteor_ddp_bytes_received_total"), 100)

        // A reconnect: a second attempt and a second (new) session, counted as a reconnect.
        harness.dropAndReopen()
        harness.receive(.connected(session: "SESSION-2"))
        harness.settle()
        XCTAssertEqual(metrics.counterTotal(label: "meteor_ddp_connection_attempts_total"), 2)
        XCTAssertEqual(try metrics.expectCounter("meteor_ddp_sessions_total", [("start", "new")]).totalValue, 2)
        XCTAssertEqual(metrics.counterTotal(label: "meteor_ddp_reconnects_total"), 1)
        withExtendedLifetime(subscription) {}
    }

    func testAResumedSessionAndAStoppedSubscriptionAreCounted() throws {
        let metrics = TestMetrics()
        let harness = ClientHarness {
            $0.metricsFactory = metrics
            $0.resumesSessions = true
        }
        harness.establishConnection()
        let subscription = harness.client.subscribe("players", notInUseTimeout: .zero)
        harness.settle()
        XCTAssertEqual(try metrics.expectMeter("meteor_ddp_subscriptions_active").lastValue, 1)
        harness.dropAndReopen()
        harness.receive(.connected(session: "SESSION-1"))
        harness.settle()
        XCTAssertEqual(harness.client.status.sessionStart, .resumed)
        XCTAssertEqual(try metrics.expectCounter("meteor_ddp_sessions_total", [("start", "resumed")]).totalValue, 1)
        XCTAssertEqual(try metrics.expectCounter("meteor_ddp_sessions_total", [("start", "new")]).totalValue, 1)
        XCTAssertEqual(metrics.counterTotal(label: "meteor_ddp_reconnects_total"), 1)
        subscription.stop()
        harness.settle()
        XCTAssertEqual(try metrics.expectMeter("meteor_ddp_subscriptions_active").lastValue, 0)
        XCTAssertEqual(
            try metrics.expectTimer("meteor_ddp_subscription_ready_duration").values.count, 0, "never ready")
    }

    /// Clients sharing a series (no `metricsLabel`) add up in the meters; one closing takes away only its own.
    func testClientsSharingASeriesAddUpAndACloseSubtractsItsOwn() throws {
        let metrics = TestMetrics()
        let (first, second) = (harness(metrics), harness(metrics))
        for harness in [first, second] {
            harness.establishConnection()
            _ = try harness.client.call("pending") { _ in }
            _ = harness.client.subscribe("held")
            harness.settle()
        }
        _ = try first.client.call("another") { _ in }
        first.settle()
        XCTAssertEqual(try metrics.expectMeter("meteor_ddp_calls_pending").lastValue, 3)
        XCTAssertEqual(try metrics.expectMeter("meteor_ddp_subscriptions_active").lastValue, 2)
        first.client.close()
        first.settle()
        XCTAssertEqual(try metrics.expectMeter("meteor_ddp_calls_pending").lastValue, 1, "the second's call")
        XCTAssertEqual(try metrics.expectMeter("meteor_ddp_subscriptions_active").lastValue, 1)
        XCTAssertEqual(
            try metrics.expectCounter("meteor_ddp_calls_completed_total", [("outcome", "client_closed")]).totalValue, 2)
    }

    /// A deadline's made-up answer is an outcome, not a latency of the server's.
    func testATimedOutCallCountsNoLatency() throws {
        let metrics = TestMetrics()
        let harness = harness(metrics)
        harness.establishConnection()
        var options = MethodOptions()
        options.timeout = .seconds(5)
        _ = try harness.client.call("slow", options: options) { _ in }
        harness.settle()
        harness.advance(by: .seconds(5))
        harness.flushData()
        XCTAssertEqual(
            try metrics.expectCounter("meteor_ddp_calls_completed_total", [("outcome", "timed_out")]).totalValue, 1)
        XCTAssertEqual(try metrics.expectTimer("meteor_ddp_call_result_duration").values, [])
        XCTAssertEqual(try metrics.expectTimer("meteor_ddp_call_updated_duration").values, [])
        XCTAssertEqual(try metrics.expectMeter("meteor_ddp_calls_pending").lastValue, 0)
    }

    func testAHeartbeatTimeoutIsCounted() throws {
        let metrics = TestMetrics()
        let harness = harness(metrics)
        harness.establishConnection()
        harness.advance(by: .milliseconds(17_500)) // silence: a ping
        harness.advance(by: .seconds(15)) // no answer
        harness.settle()
        XCTAssertEqual(metrics.counterTotal(label: "meteor_ddp_heartbeat_timeouts_total"), 1)
    }

    /// With `metricsLabel`, every metric carries the `client` dimension; without it, none does.
    func testTheClientDimensionIsThereOnlyWhenAsked() throws {
        let labelled = TestMetrics()
        harness(labelled, label: "bot-7").establishConnection()
        XCTAssertEqual(
            try labelled.expectCounter("meteor_ddp_sessions_total", [("client", "bot-7"), ("start", "new")]).totalValue,
            1)
        XCTAssertTrue(labelled.counters.allSatisfy { $0.dimensions.contains { $0 == ("client", "bot-7") } })
        XCTAssertTrue(labelled.timers.allSatisfy { $0.dimensions.contains { $0 == ("client", "bot-7") } })
        XCTAssertTrue(labelled.meters.allSatisfy { $0.dimensions.contains { $0 == ("client", "bot-7") } })
        XCTAssertFalse(labelled.timers.isEmpty || labelled.meters.isEmpty)
        let plain = TestMetrics()
        harness(plain).establishConnection()
        XCTAssertTrue(plain.counters.allSatisfy { !$0.dimensions.contains { $0.0 == "client" } })
    }

    /// The cache, the stubs and the offline store: transactions and their notifications' lag, documents in all and
    /// per collection (down as well as up), a stub's run time and its replays, the calls the store keeps and the
    /// write-behind lag.
    func testTheCacheTheStubsAndTheOfflineStoreAreMeasured() throws {
        let metrics = TestMetrics()
        let harness = ClientHarness {
            $0.metricsFactory = metrics
            $0.pendingStubMode = .rebase
            $0.persistence = .store(ScriptedClientStore(StoredState()))
        }
        func meter(_ label: String, _ dimensions: [(String, String)] = []) -> Double? {
            try? metrics.expectMeter(label, dimensions).lastValue
        }
        func timings(_ label: String) -> Int { (try? metrics.expectTimer(label).values.count) ?? 0 }
        func delivered() {
            harness.flushData()
            harness.client.database.observerQueue.sync {}
        }
        harness.establishConnection()
        harness.receive(.added(collection: "players", id: "lovelace", fields: ["score": 25]))
        harness.receive(.added(collection: "players", id: "hopper", fields: ["score": 30]))
        harness.receive(.added(collection: "teams", id: "red", fields: [:]))
        delivered()
        XCTAssertEqual(meter("meteor_ddp_collection_documents", [("collection", "players")]), 2)
        XCTAssertEqual(meter("meteor_ddp_collection_documents", [("collection", "teams")]), 1)
        XCTAssertEqual(meter("meteor_ddp_cache_documents"), 3)
        let transactions = metrics.counterTotal(label: "meteor_ddp_cache_transactions_total")
        XCTAssertGreaterThanOrEqual(transactions, 1)
        XCTAssertEqual(
            Int64(timings("meteor_ddp_notification_lag_duration")), transactions, "one notification a transaction")

        harness.client.defineStub("bump") { context in
            _ = try context.collection("players").update("lovelace", ["$inc": ["score": 1]])
            return nil
        }
        _ = try harness.client.call("bump") { _ in }
        harness.settle()
        XCTAssertEqual(timings("meteor_ddp_stub_duration"), 1)
        harness.client.waitUntilPersisted()
        XCTAssertEqual(meter("meteor_ddp_offline_calls"), 1, "the call is kept")
        XCTAssertGreaterThanOrEqual(timings("meteor_ddp_write_behind_lag_duration"), 1)

        // The server changes the stub's document: the pending stub runs again over it.
        harness.receive(.changed(collection: "players", id: "lovelace", fields: ["score": 40], cleared: []))
        delivered()
        XCTAssertEqual(harness.document("players", "lovelace")?.fields["score"], 41)
        XCTAssertEqual(metrics.counterTotal(label: "meteor_ddp_stub_replays_total"), 1)

        // The call completes (the store drops it); documents leave.
        harness.receive(.result(id: "1", result: nil, error: nil))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.receive(.removed(collection: "players", id: "hopper"))
        harness.receive(.removed(collection: "teams", id: "red"))
        delivered()
        harness.client.waitUntilPersisted()
        XCTAssertEqual(meter("meteor_ddp_offline_calls"), 0)
        XCTAssertEqual(meter("meteor_ddp_collection_documents", [("collection", "players")]), 1)
        XCTAssertEqual(meter("meteor_ddp_collection_documents", [("collection", "teams")]), 0)
        XCTAssertEqual(meter("meteor_ddp_cache_documents"), 1)
        XCTAssertEqual(
            Int64(timings("meteor_ddp_notification_lag_duration")),
            metrics.counterTotal(label: "meteor_ddp_cache_transactions_total"))
    }

    /// A server naming many collections gets a series for the first 64 only; the total counts them all.
    func testCollectionSeriesAreBounded() throws {
        let metrics = TestMetrics()
        let harness = harness(metrics)
        harness.establishConnection()
        for index in 0..<(DatabaseMetrics.collectionSeriesLimit + 6) {
            harness.receive(.added(collection: "c\(index)", id: "1", fields: [:]))
        }
        harness.flushData()
        let series = metrics.meters.filter { $0.label == "meteor_ddp_collection_documents" }
        XCTAssertEqual(series.count, DatabaseMetrics.collectionSeriesLimit)
        XCTAssertEqual(
            try metrics.expectMeter("meteor_ddp_cache_documents").lastValue,
            Double(DatabaseMetrics.collectionSeriesLimit + 6))
    }
}
