import Atomics
import CoreMetrics
import DDPTestServer
import Dispatch
import MeteorDDP
import MeteorDDPTesting

/// The cost of the client's metrics: the in-process ingest (`added`, `changed`) with a recording backend against
/// none, interleaved in one run.
enum MetricsBenchmarks {
    static func run() {
        Bench.section("Metrics: in-process ingest of 100k frames with a counting metrics backend vs none")
        let count = IngestBenchmarks.count
        let added = (0..<count).map(BenchDocuments.addedFrame)
        let changed = (0..<count).map(BenchDocuments.changedFrame)
        let backend = CountingMetrics()
        var seconds: [Bool: (added: [Double], changed: [Double])] = [true: ([], []), false: ([], [])]
        for round in 0..<10 {
            // Alternating which goes first, so neither always meets a warmer heap.
            for withBackend in round % 2 == 0 ? [false, true] : [true, false] {
                var configuration = DDPClient.Configuration()
                if withBackend { configuration.metricsFactory = backend }
                let (client, transport) = DDPClient.connectedInMemory(configuration: configuration)
                let start = DispatchTime.now()
                transport.deliver(added, thenReadyOf: client.subscribe("bench"))
                let middle = DispatchTime.now()
                transport.deliver(changed, thenReadyOf: client.subscribe("marker"))
                let end = DispatchTime.now()
                seconds[withBackend]!.added.append(Double(middle.uptimeNanoseconds - start.uptimeNanoseconds) / 1e9)
                seconds[withBackend]!.changed.append(Double(end.uptimeNanoseconds - middle.uptimeNanoseconds) / 1e9)
                client.close()
            }
        }
        for (name, path) in [
            ("added → cache → ready", \(added: [Double], changed: [Double]).added),
            ("changed → cache", \(added: [Double], changed: [Double]).changed)
        ] {
            Bench.report(
                "\(name) with a metrics backend", ours: Double(count) / median(seconds[true]![keyPath: path]),
                baseline: Double(count) / median(seconds[false]![keyPath: path]), unit: "msgs/s",
                baselineName: "none", target: ">= 0.97x")
        }
        print("frames counted by the backend: \(backend.total(of: "meteor_ddp_frames_received_total"))")
        // The snapshot's cost first: the clients the rows below close go on releasing their threads for a while.
        diagnosticsCost()
        pipelinedCost()
        manyClientsCost()
    }

    /// 1,000 echo calls in flight over loopback until all completed, through a client with a metrics backend and one
    /// without (one server, both clients connected; interleaved rounds).
    static func pipelinedCost(calls: Int = 1_000, rounds: Int = 15) {
        let backend = CountingMetrics()
        let figures = MethodBenchmarks.withEchoServer { url, plain -> (withBackend: Double, none: Double) in
            var configuration = DDPClient.Configuration()
            configuration.metricsFactory = backend
            let recorded = DDPClient(url: url, configuration: configuration)
            recorded.connect()
            for await status in recorded.statusUpdates where status.isConnected { break }
            var seconds: [Bool: [Double]] = [true: [], false: []]
            for round in 0..<rounds {
                for withBackend in round % 2 == 0 ? [false, true] : [true, false] {
                    let client = withBackend ? recorded : plain
                    seconds[withBackend]!.append(
                        try await MethodBenchmarks.pipelinedSeconds(client: client, calls: calls))
                }
            }
            recorded.close()
            return (Double(calls) / median(seconds[true]!), Double(calls) / median(seconds[false]!))
        }
        guard let figures else { return }
        Bench.report(
            "\(calls) pipelined calls with a metrics backend", ours: figures.withBackend, baseline: figures.none,
            unit: "calls/s", baselineName: "none", target: ">= 0.97x")
        print("calls counted by the backend: \(backend.total(of: "meteor_ddp_calls_started_total"))")
    }

    /// 1,000 clients connecting and subscribing to a 10-document publication (the server in another process), with a
    /// metrics backend and without, interleaved.
    static func manyClientsCost(count: Int = 1_000, rounds: Int = 4) {
        let backend = CountingMetrics()
        let box = ValueBox<[Bool: [Double]]>()
        let done = DispatchSemaphore(value: 0)
        Task {
            do {
                let server = try TenServer(deflate: false)
                defer { _ = server.stop() }
                var seconds: [Bool: [Double]] = [true: [], false: []]
                for round in 0..<rounds {
                    for withBackend in round % 2 == 0 ? [false, true] : [true, false] {
                        var configuration = DDPClient.Configuration()
                        configuration.heartbeatInterval = .seconds(15)
                        if withBackend { configuration.metricsFactory = backend }
                        let clients = (0..<count).map { _ in DDPClient(url: server.url, configuration: configuration) }
                        let start = Bench.now()
                        try await ManyClientsBenchmarks.connectAndSubscribe(clients)
                        seconds[withBackend]!.append(Double(Bench.now() - start) / 1e9)
                        precondition(clients.allSatisfy { $0.database.collection("items").count == 10 })
                        for client in clients { client.close() }
                    }
                }
                box.set(seconds)
            } catch {
                print("benchmark failed: \(error)")
            }
            done.signal()
        }
        done.wait()
        guard let seconds = box.value else { return }
        Bench.report(
            "\(count) clients connected and ready with a metrics backend", ours: Double(count) / median(seconds[true]!),
            baseline: Double(count) / median(seconds[false]!), unit: "clients/s", baselineName: "none",
            target: ">= 0.97x")
        print("sessions counted by the backend: \(backend.total(of: "meteor_ddp_sessions_total"))")
    }

    private static func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

    /// `diagnostics()` on a busy client: 100k documents, 1,000 calls pending, 100 subscriptions.
    static func diagnosticsCost() {
        let (client, transport) = DDPClient.connectedInMemory()
        transport.deliver(
            (0..<IngestBenchmarks.count).map(BenchDocuments.addedFrame), thenReadyOf: client.subscribe("bench"))
        let subscriptions = (0..<100).map { client.subscribe("extra\($0)") }
        for n in 0..<1_000 { _ = try? client.call("pending", params: [.number(Double(n))]) { _ in } }
        let rounds = 200
        let done = DispatchSemaphore(value: 0)
        let seconds = Bench.medianSeconds(runs: 5) {
            Task {
                for _ in 0..<rounds {
                    let pending = await client.diagnostics().pendingCalls.count
                    precondition(pending == 1_000)
                }
                done.signal()
            }
            done.wait()
        }
        Bench.figure(
            "diagnostics() with 100k documents, 1,000 pending calls, 100 subscriptions", seconds / Double(rounds) * 1e6,
            unit: "µs",
            note: "polled once a second: \(String(format: "%.3f", seconds / Double(rounds) * 100)) % of a core")
        withExtendedLifetime(subscriptions) { client.close() }
    }
}

/// A metrics backend that adds everything up with atomics: what a real one costs at least.
final class CountingMetrics: MetricsFactory {
    private final class Handler: CounterHandler, RecorderHandler, TimerHandler, Sendable {
        let label: String
        let sum = ManagedAtomic<Int64>(0)
        init(_ label: String) { self.label = label }
        func increment(by amount: Int64) { sum.wrappingIncrement(by: amount, ordering: .relaxed) }
        func reset() { sum.store(0, ordering: .relaxed) }
        func record(_ value: Int64) { sum.store(value, ordering: .relaxed) }
        func record(_ value: Double) { sum.store(Int64(value), ordering: .relaxed) }
        func recordNanoseconds(_ duration: Int64) { sum.wrappingIncrement(by: duration, ordering: .relaxed) }
    }

    private let made = Handlers()

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler { made.handler(label) }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        made.handler(label)
    }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler { made.handler(label) }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}

    func total(of label: String) -> Int64 { made.total(of: label) }

    /// The handlers made, by label (several clients share them, as with a real backend).
    private final class Handlers: @unchecked Sendable {
        private let lock = DispatchQueue(label: "CountingMetrics")
        private var byLabel: [String: Handler] = [:]
        func handler(_ label: String) -> Handler {
            lock.sync {
                if let handler = byLabel[label] { return handler }
                let handler = Handler(label)
                byLabel[label] = handler
                return handler
            }
        }
        func total(of label: String) -> Int64 { lock.sync { byLabel[label]?.sum.load(ordering: .relaxed) ?? 0 } }
    }
}
