import Dispatch
import EJSON
import Foundation
import MeteorDDP
import MeteorDDPTesting

/// ``PendingStubMode/rebase``: what a server change to a document costs when 1, 10 or 100 pending stubs wrote it
/// (each is replayed over the new version), and when one did under a backlog of 1,000 or 5,000 pending calls whose
/// stubs wrote other documents (not replayed: they are not concerned), against the same change to a document no stub
/// wrote. Two clients in
/// process, taking turns change by change; both apply incoming data as soon as they get to it
/// (`bufferedWritesInterval` zero: the default 5 ms debounce would otherwise be most of the baseline's figure, and the
/// replay's inline flush does not wait for it).
enum StubRebaseBenchmarks {
    static func run() {
        Bench.section(
            "Rebasing stubs: a server change → notification, under 1, 10 and 100 pending stubs vs no pending stub")
        for pending in [1, 10, 100] {
            let (ours, baseline) = changeToNotification(pendingStubs: pending, changes: 1_000)
            Bench.report(
                "change under \(pending) pending stub\(pending == 1 ? "" : "s") → notification p50", ours: ours.p50,
                baseline: baseline.p50, unit: "µs", baselineName: "no pending stub")
            Bench.report(
                "change under \(pending) pending stub\(pending == 1 ? "" : "s") → notification p99", ours: ours.p99,
                baseline: baseline.p99, unit: "µs", baselineName: "no pending stub",
                target: pending == 100 ? "each replayed stub costs its run; no cost without pending stubs" : nil)
        }
        for backlog in [1_000, 5_000] {
            let (ours, baseline) = changeToNotification(pendingStubs: 1, backlog: backlog, changes: 1_000)
            Bench.report(
                "change under 1 pending stub, \(backlog) others pending → notification p99", ours: ours.p99,
                baseline: baseline.p99, unit: "µs", baselineName: "no pending stub",
                target: backlog == 5_000 ? "as under 1 pending stub: the backlog is not replayed" : nil)
        }
        let (ours, baseline) = callToNotification(backlog: 5_000, calls: 1_000)
        Bench.report(
            "a new call's stub, 5000 others pending → notification p99", ours: ours.p99, baseline: baseline.p99,
            unit: "µs", baselineName: "none pending",
            target: "as with none pending: marking its document pending does not copy the backlog's")
    }

    /// A call's stub → its notification on a client with `backlog` pending calls, against one with none (the call
    /// stays pending: each side's backlog grows by one per sample).
    private static func callToNotification(backlog: Int, calls: Int) -> (
        ours: (p50: Double, p99: Double), baseline: (p50: Double, p99: Double)
    ) {
        let (busy, _, busyObserved) = client(pendingStubs: 0, backlog: backlog)
        let (idle, _, idleObserved) = client(pendingStubs: 0)
        var ours: [Double] = []
        var baseline: [Double] = []
        for _ in 0..<calls {
            for (client, observed, isOurs) in [(busy, busyObserved, true), (idle, idleObserved, false)] {
                let start = Bench.now()
                _ = try? client.call("add") { _ in }
                let delivered = observed.waitForOne()
                (isOurs ? { ours.append($0) } : { baseline.append($0) })(Double(delivered - start) / 1000)
            }
        }
        busy.close()
        idle.close()
        return (percentiles(ours), percentiles(baseline))
    }

    private static func percentiles(_ samples: [Double]) -> (p50: Double, p99: Double) {
        let sorted = samples.sorted()
        return (sorted[sorted.count / 2], sorted[sorted.count * 99 / 100])
    }

    /// A client with one document, `lovelace`, `pending` unanswered calls whose stub increments it, and `backlog`
    /// unanswered calls whose stubs each insert a document of their own.
    private static func client(pendingStubs pending: Int, backlog: Int = 0) -> (DDPClient, InMemoryTransport, Observed)
    {
        var configuration = DDPClient.Configuration()
        configuration.pendingStubMode = .rebase
        configuration.bufferedWritesInterval = .zero
        let (client, transport) = DDPClient.connectedInMemory(configuration: configuration)
        client.defineStub("inc") { context in
            .number(Double(try context.collection("players").update("lovelace", ["$inc": ["score": 1]])))
        }
        client.defineStub("add") { context in
            try .string(context.collection("players").insert(["score": 0]) ?? "")
        }
        let observed = Observed(client.database)
        transport.receive(ServerMessage.added(collection: "players", id: "lovelace", fields: ["score": 0]))
        observed.waitForOne()
        for _ in 0..<backlog {
            _ = try? client.call("add") { _ in }
            observed.waitForOne()
        }
        for _ in 0..<pending {
            _ = try? client.call("inc") { _ in }
            observed.waitForOne()
        }
        return (client, transport, observed)
    }

    private static func changeToNotification(pendingStubs pending: Int, backlog: Int = 0, changes: Int) -> (
        ours: (p50: Double, p99: Double), baseline: (p50: Double, p99: Double)
    ) {
        let (rebasing, rebasingTransport, rebasingObserved) = client(pendingStubs: pending, backlog: backlog)
        let (plain, plainTransport, plainObserved) = client(pendingStubs: 0)
        var ours: [Double] = []
        var baseline: [Double] = []
        for change in 0..<changes {
            let message = ServerMessage.changed(
                collection: "players", id: "lovelace", fields: ["color": .string("c\(change)")], cleared: [])
            for (transport, observed, isOurs) in [
                (rebasingTransport, rebasingObserved, true), (plainTransport, plainObserved, false)
            ] {
                let start = Bench.now()
                transport.receive(message)
                let delivered = observed.waitForOne()
                (isOurs ? { ours.append($0) } : { baseline.append($0) })(Double(delivered - start) / 1000)
            }
        }
        rebasing.close()
        plain.close()
        return (percentiles(ours), percentiles(baseline))
    }

    /// Waits for a database's notifications one at a time and says when each was delivered.
    private final class Observed: @unchecked Sendable {
        // @unchecked because `deliveredAt` is written before `delivered` is signalled and read after it is waited for.
        private let delivered = DispatchSemaphore(value: 0)
        private var deliveredAt: [UInt64] = []
        private let lock = NSLock()
        private var observer: (any NSObjectProtocol)?

        init(_ database: Database) {
            observer = NotificationCenter.default.addObserver(
                forName: .databaseDidChange, object: database, queue: nil
            ) { [weak self] _ in
                guard let self else { return }
                let now = Bench.now()
                lock.withLock { deliveredAt.append(now) }
                delivered.signal()
            }
        }

        deinit {
            if let observer { NotificationCenter.default.removeObserver(observer) }
        }

        /// Waits for the next notification; returns when it was delivered.
        @discardableResult
        func waitForOne() -> UInt64 {
            delivered.wait()
            return lock.withLock { deliveredAt.removeFirst() }
        }
    }
}
