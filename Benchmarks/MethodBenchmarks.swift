import DDPTestServer
import EJSON
import Foundation
import Logging
@_spi(Storage) import MeteorDDP
import MeteorDDPTesting
import NIOCore
import NIOPosix
import WSClient

/// Latency compensation: how soon a stub's effect reaches observers, and how long a call takes to complete over
/// loopback compared with a bare WebSocket round trip.
enum MethodBenchmarks {
    static func run() {
        stubToNotification()
        completionsWithBacklog()
        callRoundTrip()
        pipelinedCalls()
    }

    /// A stub inserts a document; an observer of `database.changes` receives the change set.
    static func stubToNotification() {
        Bench.section("Methods: stub call → change notification delivered to an observer (in process)")
        let transport = InMemoryTransport()
        let client = DDPClient(transport: transport)
        client.defineStub("add") { context in
            try context.collection("items").insert(["n": context.params[0] ?? nil]).map { .string($0) }
        }
        // The observer notes when it is called; the benchmark thread waits for it only to start the next call, so
        // its own wake-up is not part of the figure.
        let delivered = DispatchSemaphore(value: 0)
        let deliveredAt = ManagedTimestamp()
        let observer = NotificationCenter.default.addObserver(
            forName: .databaseDidChange, object: client.database, queue: nil
        ) { _ in
            deliveredAt.set(DispatchTime.now().uptimeNanoseconds)
            delivered.signal()
        }
        var samples: [Double] = []
        for n in 0..<5_000 {
            let start = DispatchTime.now().uptimeNanoseconds
            _ = try? client.call("add", params: [.number(Double(n))]) { _ in }
            delivered.wait()
            samples.append(Double(deliveredAt.value - start) / 1000)
        }
        NotificationCenter.default.removeObserver(observer)
        samples.sort()
        let p50 = samples[samples.count / 2]
        let p99 = samples[samples.count * 99 / 100]
        Bench.figure("stub → notification p50", p50, unit: "µs")
        Bench.figure("stub → notification p99", p99, unit: "µs", note: "target < 200 µs")
        client.close()
    }

    /// 1,000 sent calls complete (`updated`, then `result`) while 10,000 calls wait behind a wait call, each of whose
    /// stubs wrote a document, so the client tracks 11,000 stub-written documents: against the same 1,000 completions
    /// with nothing queued. A completion must cost what the sent calls make it cost, not the backlog: a client that
    /// fell behind the server during a long outage would otherwise never catch up (the chaos soak's 600 s run did not).
    ///
    /// Then one block of 10,000 sent calls (calls made offline all go out as one block at the reconnect) against a
    /// block of 1,000: each `updated` waits for every document the block's stubs wrote (Meteor's rule), and that must
    /// not cost the block's size per completion. `MDDP_BLOCK=N` sets the large block's size.
    static func completionsWithBacklog() {
        Bench.section(
            "Methods: completions with 10,000 stub calls queued behind a wait call, "
                + "and in one block of 10,000 (in process)"
        )
        /// Completions per second of the first `block` calls, all sent at once, with `backlog` calls queued behind a
        /// wait call.
        func completionsPerSecond(block: Int, backlog: Int) -> Double {
            let (client, transport) = DDPClient.connectedInMemory()
            client.defineStub("add") { context in
                try context.collection("items").insert(["n": context.params[0] ?? nil]).map { .string($0) }
            }
            let completed = DispatchGroup()
            for n in 0..<block {
                completed.enter()
                _ = try? client.call("add", params: [.number(Double(n))]) { _ in completed.leave() }
            }
            if backlog > 0 {
                _ = try? client.call("add", params: [.number(-1)], options: MethodOptions(wait: true)) { _ in }
                for n in 0..<backlog { _ = try? client.call("add", params: [.number(Double(n))]) { _ in } }
            }
            let sent = transport.sentMessages.compactMap { message -> String? in
                if case .method(let id, _, _, _) = message { return id }
                return nil
            }
            precondition(sent.count == block, "the first block is on the wire, the backlog is not")
            let frames = sent.flatMap {
                [#"{"msg":"updated","methods":["\#($0)"]}"#, #"{"msg":"result","id":"\#($0)","result":null}"#]
            }
            let start = Bench.now()
            for frame in frames { transport.receive(frame) }
            completed.wait()
            let seconds = Double(Bench.now() - start) / 1e9
            client.close()
            return Double(block) / seconds
        }
        var with: [Double] = []
        var without: [Double] = []
        for _ in 0..<3 {
            without.append(completionsPerSecond(block: 1_000, backlog: 0))
            with.append(completionsPerSecond(block: 1_000, backlog: 10_000))
        }
        Bench.report(
            "completions with 10,000 calls queued", ours: with.sorted()[1], baseline: without.sorted()[1],
            unit: "calls/s",
            baselineName: "with none queued", target: "≥ 0.5x; 0.04x when each completion scanned the backlog")
        let large = ProcessInfo.processInfo.environment["MDDP_BLOCK"].flatMap(Int.init) ?? 10_000
        var largeBlock: [Double] = []
        for _ in 0..<3 { largeBlock.append(completionsPerSecond(block: large, backlog: 0)) }
        Bench.report(
            "completions in one block of \(large) calls", ours: largeBlock.sorted()[1], baseline: without.sorted()[1],
            unit: "calls/s", baselineName: "a block of 1,000",
            target: "≥ 0.5x (a waiter per document per `updated`, as Meteor's client keeps them, is quadratic)")
    }

    /// `call` until completion (result and updated, data visible) against a raw WebSocket echo (ping → pong) on the
    /// same server, same machine, same run. The two alternate in rounds over two open connections, so drift in the
    /// machine's speed during the run affects both alike.
    static func callRoundTrip() {
        Bench.section("Methods: call → completion over loopback vs a raw WebSocket round trip (interleaved rounds)")
        guard
            let (ours, raw, rawMethod) = withEchoServer({ url, client in
                try await interleavedRoundTrips(url: url, client: client, rounds: 20, perRound: 150)
            })
        else { return }
        Bench.report(
            "call → completion p50", ours: ours, baseline: raw, unit: "µs",
            baselineName: "raw WebSocket ping → pong p50",
            target: "within 1.5x")
        // What the server's method run adds to a round trip: the same `method` frame from the bare client, until its
        // `result` and `updated` are both back.
        Bench.report(
            "reference: raw WebSocket, the same method frame → result and updated p50", ours: rawMethod, baseline: raw,
            unit: "µs", baselineName: "raw WebSocket ping → pong p50")
        Bench.report(
            "call → completion p50", ours: ours, baseline: rawMethod, unit: "µs",
            baselineName: "raw WebSocket, the same method frame p50")
    }

    /// 1,000 `echo` calls made at once, until every one has completed (its result received and its data visible),
    /// against a bare swift-websocket client sending the same 1,000 `method` frames at once and reading until every
    /// `result` and `updated` came back, on the same server; five rounds each, alternating, medians compared.
    static func pipelinedCalls(calls: Int = 1_000, rounds: Int = 5) {
        Bench.section(
            "Methods: \(calls) calls in flight over loopback, until all completed, "
                + "vs a raw WebSocket client sending the same frames"
        )
        let onLoop = ValueBox<Double>()
        guard
            let (ours, raw) = withEchoServer({ (url, client) async throws -> (ours: Double, raw: Double) in
                var ours: [Double] = []
                var raw: [Double] = []
                if ProcessInfo.processInfo.environment["MDDP_PROFILE_PIPELINED"] == "raw" {
                    // Only the raw client, many rounds, for a profiler.
                    for round in 0..<40 {
                        raw.append(try await rawPipelinedSeconds(url: url, calls: calls, round: round))
                    }
                    return (1, Double(calls) / raw.sorted()[raw.count / 2])
                }
                if ProcessInfo.processInfo.environment["MDDP_PROFILE_PIPELINED"] == "rawloop" {
                    // Only the raw client with its tasks on the event loop, many rounds, for a profiler.
                    for round in 0..<40 {
                        raw.append(try await rawPipelinedOnEventLoopSeconds(url: url, calls: calls, round: round))
                    }
                    return (1, Double(calls) / raw.sorted()[raw.count / 2])
                }
                if ProcessInfo.processInfo.environment["MDDP_PROFILE_PIPELINED"] != nil {
                    // Only our side, many rounds, for a profiler.
                    for _ in 0..<40 { ours.append(try await pipelinedSeconds(client: client, calls: calls)) }
                    return (Double(calls) / ours.sorted()[ours.count / 2], 1)
                }
                var rawOnLoop: [Double] = []
                for round in 0..<rounds {
                    raw.append(try await rawPipelinedSeconds(url: url, calls: calls, round: round))
                    ours.append(try await pipelinedSeconds(client: client, calls: calls))
                    rawOnLoop.append(try await rawPipelinedOnEventLoopSeconds(url: url, calls: calls, round: round))
                }
                onLoop.set(Double(calls) / rawOnLoop.sorted()[rounds / 2])
                return (Double(calls) / ours.sorted()[rounds / 2], Double(calls) / raw.sorted()[rounds / 2])
            })
        else { return }
        Bench.report(
            "\(calls) pipelined calls", ours: ours, baseline: raw, unit: "calls/s",
            baselineName: "raw WebSocket, the same frames",
            target: "≥ 0.8x")
        if let loop = onLoop.value {
            Bench.report(
                "reference: raw WebSocket, writer and reader tasks on the event loop (the client's transport, no DDP)",
                ours: loop, baseline: raw, unit: "calls/s", baselineName: "raw WebSocket, the same frames")
        }
    }

    /// The raw client's frames written by one task while another reads, both on the connection's event loop, as the
    /// client's transport runs them: what that design costs before any DDP work.
    static func rawPipelinedOnEventLoopSeconds(url: URL, calls: Int, round: Int) async throws -> Double {
        let eventLoop = MultiThreadedEventLoopGroup.singleton.next()
        return try await Task(executorPreference: EventLoopTaskExecutor(eventLoop)) {
            let box = ValueBox<Double>()
            var configuration = WebSocketClientConfiguration(maxFrameSize: 1 << 20)
            configuration.validateUTF8 = true
            try await WebSocketClient.connect(
                url: url.absoluteString, configuration: configuration, eventLoopGroup: eventLoop,
                logger: Logger(label: "raw")
            ) { inbound, outbound, _ in
                var iterator = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                try await outbound.write(.text(#"{"msg":"connect","version":"1","support":["1"]}"#))
                _ = try await iterator.next() // connected
                let start = DispatchTime.now().uptimeNanoseconds
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for n in 0..<calls {
                            try await outbound.write(
                                .text(#"{"msg":"method","id":"l\#(round)-\#(n)","method":"echo","params":[\#(n)]}"#))
                        }
                    }
                    for _ in 0..<(2 * calls) { _ = try await iterator.next() }
                    try await group.waitForAll()
                }
                box.set(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
                try await outbound.close(.normalClosure, reason: nil)
            }
            guard let seconds = box.value else { throw CancellationError() }
            return seconds
        }.value
    }

    /// Runs `measure` (from a task; the calling thread waits) with the URL of a test server answering `echo` and a
    /// client connected to it; returns what it measured, `nil` if it failed. The server runs on a loop of its own: no
    /// client connection ever shares its thread, whichever loop it gets.
    static func withEchoServer<Figures: Sendable>(
        _ measure: @escaping @Sendable (URL, DDPClient) async throws -> Figures
    ) -> Figures? {
        let group = DispatchGroup()
        group.enter()
        let box = ValueBox<Figures>()
        Task {
            do {
                var serverConfiguration = DDPTestServer.Configuration()
                serverConfiguration.eventLoopGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
                let server = DDPTestServer(configuration: serverConfiguration)
                try await server.start()
                server.method("echo") { context in context.params.first }
                let client = DDPClient(url: server.url)
                client.connect()
                for await status in client.statusUpdates where status.isConnected { break }
                box.set(try await measure(server.url, client))
                client.close()
                try await server.stop()
            } catch {
                print("benchmark failed: \(error)")
            }
            group.leave()
        }
        group.wait()
        return box.value
    }

    /// Seconds for `calls` echo calls made at once through the client, until the last completion.
    static func pipelinedSeconds(client: DDPClient, calls: Int) async throws -> Double {
        let trace = ProcessInfo.processInfo.environment["MDDP_TRACE"] != nil
        let start = DispatchTime.now().uptimeNanoseconds
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let remaining = ManagedTimestamp()
            remaining.set(UInt64(calls))
            for n in 0..<calls {
                _ = try? client.call("echo", params: [.number(Double(n))]) { _ in
                    if remaining.decrement() == 0 { done.resume() }
                }
            }
            if trace { print("issued after \((DispatchTime.now().uptimeNanoseconds - start) / 1000) µs") }
        }
        if trace { print("completed after \((DispatchTime.now().uptimeNanoseconds - start) / 1000) µs") }
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    /// Seconds for a bare WebSocket client to send `calls` method frames at once and read every `result` and
    /// `updated` back (a fresh connection per round; its connect is not timed).
    static func rawPipelinedSeconds(url: URL, calls: Int, round: Int) async throws -> Double {
        let box = ValueBox<Double>()
        var configuration = WebSocketClientConfiguration(maxFrameSize: 1 << 20)
        configuration.validateUTF8 = true
        try await WebSocketClient.connect(
            url: url.absoluteString, configuration: configuration, logger: Logger(label: "raw")
        ) { inbound, outbound, _ in
            var iterator = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
            try await outbound.write(.text(#"{"msg":"connect","version":"1","support":["1"]}"#))
            _ = try await iterator.next() // connected
            let start = DispatchTime.now().uptimeNanoseconds
            for n in 0..<calls {
                try await outbound.write(
                    .text(#"{"msg":"method","id":"r\#(round)-\#(n)","method":"echo","params":[\#(n)]}"#))
            }
            // Each call answers with `result` and `updated`.
            for _ in 0..<(2 * calls) { _ = try await iterator.next() }
            box.set(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
            try await outbound.close(.normalClosure, reason: nil)
        }
        guard let seconds = box.value else { throw CancellationError() }
        return seconds
    }

    /// Rounds of DDP pings answered by the server over a bare swift-websocket client (the floor for a call), each
    /// followed by a round of `echo` calls through the client; returns both p50s.
    static func interleavedRoundTrips(
        url: URL, client: DDPClient, rounds: Int, perRound: Int
    ) async throws -> (ours: Double, raw: Double, rawMethod: Double) {
        let box = ValueBox<(ours: Double, raw: Double, rawMethod: Double)>()
        var configuration = WebSocketClientConfiguration(maxFrameSize: 1 << 20)
        configuration.validateUTF8 = true
        try await WebSocketClient.connect(
            url: url.absoluteString, configuration: configuration, logger: Logger(label: "raw")
        ) { inbound, outbound, _ in
            var iterator = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
            try await outbound.write(.text(#"{"msg":"connect","version":"1","support":["1"]}"#))
            _ = try await iterator.next() // connected
            var raw: [Double] = []
            var rawMethod: [Double] = []
            var ours: [Double] = []
            /// The bare client's `method` frame, until its `result` and its `updated` are back (in either order).
            func rawMethodRoundTrip(_ n: Int, id: Int) async throws {
                try await outbound.write(.text(#"{"msg":"method","method":"echo","params":[\#(n)],"id":"r\#(id)"}"#))
                var waiting = 2
                while waiting > 0, let frame = try await iterator.next() {
                    if case .text(let text) = frame, text.contains(#""result""#) || text.contains(#""updated""#) {
                        waiting -= 1
                    }
                }
            }
            let only = ProcessInfo.processInfo.environment["MDDP_PROFILE_ROUNDTRIP"] // "ours" or "raw": that side alone
            for round in 0..<rounds {
                if only == "ours" {
                    for n in 0..<perRound { _ = try await client.call("echo", params: [.number(Double(n))]) }
                    continue
                }
                if only == "raw" {
                    for n in 0..<perRound { try await rawMethodRoundTrip(n, id: round * perRound + n) }
                    continue
                }
                for n in 0..<perRound {
                    let start = DispatchTime.now().uptimeNanoseconds
                    try await outbound.write(.text(#"{"msg":"ping","id":"\#(round * perRound + n)"}"#))
                    _ = try await iterator.next()
                    raw.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
                }
                for n in 0..<perRound {
                    let start = DispatchTime.now().uptimeNanoseconds
                    try await rawMethodRoundTrip(n, id: round * perRound + n)
                    rawMethod.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
                }
                for n in 0..<perRound {
                    let start = DispatchTime.now().uptimeNanoseconds
                    _ = try await client.call("echo", params: [.number(Double(n))])
                    ours.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
                }
            }
            if only != nil { (raw, rawMethod, ours) = ([1], [1], [1]) } // a profiler's run: nothing measured
            func median(_ samples: [Double]) -> Double { samples.sorted()[samples.count / 2] }
            box.set((median(ours), median(raw), median(rawMethod)))
            try await outbound.close(.normalClosure, reason: nil)
        }
        guard let figures = box.value else { throw CancellationError() }
        return figures
    }
}

final class ManagedTimestamp: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: UInt64 = 0
    func set(_ value: UInt64) { lock.withLock { stored = value } }
    var value: UInt64 { lock.withLock { stored } }
    /// Subtracts one and returns the new value (a countdown).
    func decrement() -> UInt64 {
        lock.withLock {
            stored -= 1
            return stored
        }
    }
}

final class ValueBox<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value?
    func set(_ value: Value) { lock.withLock { stored = value } }
    var value: Value? { lock.withLock { stored } }
}
