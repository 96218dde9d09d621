import DDPTestServer
import EJSON
import Foundation
import Logging
@_spi(Storage) import MeteorDDP
import MeteorDDPTesting
import WSClient
import WSCompression

/// Ingest: `added` frames → parsed → applied to the cache → subscription ready; in process and over loopback.
enum IngestBenchmarks {
    static let count = 100_000

    static func run() {
        inProcess()
        endToEnd(deflate: false)
        endToEnd(deflate: true)
    }

    /// Frames handed straight to the client (an in-memory transport), until the subscription is ready with every
    /// document in the cache; the same frames merely parsed by EJSON.parse are the ceiling.
    static func inProcess() {
        Bench.section("Ingest (in process): 100k `added` frames → cache → ready")
        let frames = (0..<count).map(BenchDocuments.addedFrame)
        let changed = (0..<count).map(BenchDocuments.changedFrame)
        // MDDP_PROFILE_INPROCESS=1: our side only, five times (for a profiler; no baseline, no report);
        // MDDP_PROFILE_INPROCESS=changed: the `changed` burst ten times on one client, for a profile of that path
        // alone; MDDP_PROFILE_INPROCESS=decode-changed: the `changed` frames' decoding alone, ten times.
        let profileMode = ProcessInfo.processInfo.environment["MDDP_PROFILE_INPROCESS"]
        if profileMode == "decode-changed" {
            // MDDP_PROFILE_INPROCESS=decode-changed: only the `changed` frames' decoding, ten times (for callgrind).
            for _ in 0..<10 { precondition(DocumentMessageDecoding.decodeAll(changed) == changed.count) }
            return
        }
        if profileMode == "changed" {
            // Every round changes every document: the rounds alternate between two sets of values.
            let changedBack = (0..<count).map { i in
                EJSON.stringify([
                    "msg": "changed", "collection": .string(BenchDocuments.collection),
                    "id": .string(BenchDocuments.id(i)),
                    "fields": ["score": .number(Double(i)), "name": .string("Document \(i), again")]
                ])
            }
            // MDDP_METRICS_BACKEND=1: with the benchmark's counting metrics backend (its cost, in instructions).
            var configuration = DDPClient.Configuration()
            if ProcessInfo.processInfo.environment["MDDP_METRICS_BACKEND"] == "1" {
                configuration.metricsFactory = CountingMetrics()
            }
            let (client, transport) = DDPClient.connectedInMemory(configuration: configuration)
            transport.deliver(frames, thenReadyOf: client.subscribe("bench"))
            for round in 0..<10 {
                let start = DispatchTime.now()
                transport.deliver(
                    round % 2 == 0 ? changed : changedBack, thenReadyOf: client.subscribe("marker\(round)"))
                print(
                    String(
                        format: "changed %.0f msgs/s",
                        Double(count) / (Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9)))
            }
            client.close()
            return
        }
        let profiling = profileMode != nil
        let parseOnly =
            profiling
            ? 1
            : Bench.medianSeconds(runs: 3) {
                for frame in frames { _ = try! EJSON.parse(frame) }
            }
        let parseChangedOnly =
            profiling
            ? 1
            : Bench.medianSeconds(runs: 3) {
                for frame in changed { _ = try! EJSON.parse(frame) }
            }
        let decodeOnly =
            profiling
            ? 1
            : Bench.medianSeconds(runs: 3) {
                precondition(DocumentMessageDecoding.decodeAll(frames) == frames.count)
            }
        let decodeChangedOnly =
            profiling
            ? 1
            : Bench.medianSeconds(runs: 3) {
                precondition(DocumentMessageDecoding.decodeAll(changed) == changed.count)
            }
        var addedSeconds: [Double] = []
        var changedSeconds: [Double] = []
        // Five rounds, each on a new client, the median reported (the first runs on a cold heap).
        for _ in 0..<5 {
            var configuration = DDPClient.Configuration()
            if let size = ProcessInfo.processInfo.environment["MDDP_BATCH"].flatMap(Int.init) {
                configuration.bufferedWritesMaxBatchSize = size
            }
            let (client, transport) = DDPClient.connectedInMemory(configuration: configuration)
            let sub = client.subscribe("bench")
            let marker = client.subscribe("marker")
            let start = DispatchTime.now()
            transport.deliver(frames, thenReadyOf: sub)
            addedSeconds.append(Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9)
            precondition(client.database.collection(BenchDocuments.collection).count == count)
            let changeStart = DispatchTime.now()
            transport.deliver(changed, thenReadyOf: marker)
            changedSeconds.append(Double(DispatchTime.now().uptimeNanoseconds - changeStart.uptimeNanoseconds) / 1e9)
            client.close()
        }
        if profiling {
            for (added, changes) in zip(addedSeconds, changedSeconds) {
                print(
                    String(
                        format: "added %.0f docs/s, changed %.0f msgs/s", Double(count) / added, Double(count) / changes
                    ))
            }
            return
        }
        let added = addedSeconds.sorted()[2]
        let changes = changedSeconds.sorted()[2]
        Bench.report(
            "added → cache → ready", ours: Double(count) / added, baseline: Double(count) / parseOnly, unit: "docs/s",
            baselineName: "EJSON.parse of the same frames")
        Bench.report(
            "added → cache → ready", ours: Double(count) / added, baseline: Double(count) / decodeOnly, unit: "docs/s",
            baselineName: "packed decoding alone (one thread)")
        print(
            String(
                format: "added vs Meteor's JS client (76k docs/s): %.2fx  (target ≥ 10x: 760k docs/s)",
                Double(count) / added / 76_000))
        Bench.report(
            "changed → cache", ours: Double(count) / changes, baseline: Double(count) / parseChangedOnly,
            unit: "msgs/s",
            baselineName: "EJSON.parse of the same frames")
        Bench.report(
            "changed → cache", ours: Double(count) / changes, baseline: Double(count) / decodeChangedOnly,
            unit: "msgs/s",
            baselineName: "packed decoding alone (one thread)")
        print(
            String(
                format: "changed vs Meteor's JS client (~100k msgs/s): %.2fx  (target ≥ 10x: 1M msgs/s)",
                Double(count) / changes / 100_000))
        // Meteor's figures come from the anchors' machine; Node's JSON.parse of the same frames, here and there, says
        // how fast this machine is for Meteor's client.
        if let (nodeRate, nodeVersion) = nodeJSONParseRate(frames) {
            let factor = nodeRate / anchorNodeJSONParseRate
            Bench.report(
                "reference: Node \(nodeVersion) JSON.parse of the same frames", ours: nodeRate,
                baseline: anchorNodeJSONParseRate,
                unit: "frames/s", baselineName: "Node 20 on the anchors' machine")
            print(
                String(
                    format:
                        "added vs Meteor's JS client estimated at this machine's speed "
                        + "(76k x %.2f = %.0fk docs/s): %.2fx; changed (100k x %.2f): %.2fx",
                    factor, 76 * factor, Double(count) / added / (76_000 * factor), factor,
                    Double(count) / changes / (100_000 * factor)))
        } else {
            print("reference: Node's JSON.parse not measured (`node` not found or it failed)")
        }
    }

    /// Node 20's `JSON.parse` of the bench `added` frames on the machine where Meteor's JS client (ddp-client 3.0.2
    /// with minimongo, under Node 20) took in 76k `added` and ~100k `changed` a second (README, *Benchmarks*).
    static let anchorNodeJSONParseRate = 474_000.0

    /// Node's `JSON.parse` of `frames` on this machine (frames/s, the median of seven passes) and Node's version, or
    /// `nil` without Node.
    static func nodeJSONParseRate(_ frames: [String]) -> (rate: Double, version: String)? {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("mddp-bench-frames-\(getpid()).txt")
        defer { try? FileManager.default.removeItem(at: file) }
        guard (try? frames.joined(separator: "\n").write(to: file, atomically: false, encoding: .utf8)) != nil else {
            return nil
        }
        let script = """
            const frames = require("fs").readFileSync(process.argv[1], "utf8").split("\\n");
            const rates = [];
            for (let pass = 0; pass < 7; pass++) {
              const start = process.hrtime.bigint();
              let sink = 0;
              for (const frame of frames) sink += JSON.parse(frame).id.length;
              rates.push(frames.length / (Number(process.hrtime.bigint() - start) / 1e9));
            }
            rates.sort((a, b) => a - b);
            console.log(rates[3] + " " + process.version);
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["node", "-e", script, file.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        let words = String(decoding: data, as: UTF8.self).split(separator: " ")
        guard words.count == 2, let rate = Double(words[0]) else { return nil }
        return (rate, words[1].trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// The test server publishes 100k documents over a loopback WebSocket: from `sub` sent to ready with every
    /// document in the cache, against a bare swift-websocket client receiving the same frames, with permessage-deflate
    /// off (the server declines the client's offer) or on (both sides compress, as against Meteor's server). Three
    /// alternating rounds each (the server's first run is the slowest), medians compared.
    static func endToEnd(deflate: Bool, rounds: Int = 3) {
        let mode = deflate ? "permessage-deflate on" : "permessage-deflate off"
        Bench.section("Ingest (end to end over loopback, \(mode)): 100k documents, sub → ready, vs raw frame receive")
        let group = DispatchGroup()
        group.enter()
        let results = ResultsBox()
        Task {
            do {
                var configuration = DDPTestServer.Configuration()
                configuration.permessageDeflate = deflate
                let server = DDPTestServer(configuration: configuration)
                try await server.start()
                server.publishBenchDocuments(count: count)
                var raw: [Double] = []
                var ours: [Double] = []
                var frames = 0
                var cached = 0
                for _ in 0..<rounds {
                    // Baseline: the same WebSocket stack, receiving and counting frames only.
                    let rawStart = Bench.now()
                    frames = try await rawReceive(url: server.url, deflate: deflate)
                    raw.append(Double(Bench.now() - rawStart) / 1e9)
                    // Ours: the client, until ready with every document in the cache (it offers compression by
                    // default).
                    let client = DDPClient(url: server.url)
                    client.connect()
                    for await status in client.statusUpdates where status.isConnected { break }
                    let start = Bench.now()
                    _ = client.collection(BenchDocuments.collection)
                    try await client.subscribe("bench").ready()
                    ours.append(Double(Bench.now() - start) / 1e9)
                    cached = client.database.collection(BenchDocuments.collection).count
                    client.close()
                }
                try await server.stop()
                let compressed = server.perMessageDeflateStatistics.messagesDeflated
                precondition(
                    deflate ? compressed >= 2 * rounds * count : compressed == 0, "permessage-deflate was not as asked")
                results.set(
                    raw: raw.sorted()[rounds / 2], ours: ours.sorted()[rounds / 2], frames: frames, cached: cached)
            } catch {
                print("end-to-end benchmark failed: \(error)")
            }
            group.leave()
        }
        group.wait()
        guard let (raw, ours, frames, cached) = results.values else { return }
        print(
            "raw receive: \(frames) frames; client cache: \(cached) documents (medians of \(rounds) alternating rounds)"
        )
        Bench.report(
            "sub → ready with all documents (\(mode))", ours: Double(count) / ours, baseline: Double(count) / raw,
            unit: "docs/s",
            baselineName: "raw frame receive", target: "≥ 0.95x")
    }

    /// Connects with a bare swift-websocket client, subscribes to `bench`, and counts text frames until its `ready`;
    /// with `deflate`, it offers permessage-deflate as our client does.
    static func rawReceive(url: URL, deflate: Bool) async throws -> Int {
        let counter = ResultsBox()
        var configuration = WebSocketClientConfiguration(maxFrameSize: 16 << 20)
        configuration.validateUTF8 = true
        if deflate {
            configuration.extensions = [
                WebSocketExtensionFactory.perMessageDeflate(maxDecompressedFrameSize: 64 << 20).build()
            ]
        }
        try await WebSocketClient.connect(
            url: url.absoluteString, configuration: configuration, logger: Logger(label: "raw")
        ) { inbound, outbound, _ in
            try await outbound.write(.text(#"{"msg":"connect","version":"1","support":["1"]}"#))
            try await outbound.write(.text(#"{"msg":"sub","id":"raw","name":"bench","params":[]}"#))
            var frames = 0
            for try await message in inbound.messages(maxSize: 64 << 20) {
                guard case .text(let text) = message else { continue }
                frames += 1
                if text.hasPrefix(#"{"msg":"ready""#) { break }
            }
            counter.set(raw: 0, ours: 0, frames: frames, cached: 0)
            try await outbound.close(.normalClosure, reason: nil)
        }
        return counter.values?.frames ?? 0
    }
}

final class ResultsBox: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: (Double, Double, Int, Int)?
    func set(raw: Double, ours: Double, frames: Int, cached: Int) {
        lock.withLock { stored = (raw, ours, frames, cached) }
    }
    var values: (raw: Double, ours: Double, frames: Int, cached: Int)? {
        lock.withLock { stored.map { ($0.0, $0.1, $0.2, $0.3) } }
    }
}

extension DDPClient {
    /// A client connected over an in-memory transport (the `connected` message received), with the bench collection
    /// declared.
    static func connectedInMemory(configuration: DDPClient.Configuration = Configuration()) -> (
        DDPClient, InMemoryTransport
    ) {
        let transport = InMemoryTransport()
        let client = DDPClient(transport: transport, configuration: configuration)
        client.connect()
        transport.waitUntilOpenable(client)
        transport.open()
        transport.receive(#"{"msg":"connected","session":"bench"}"#)
        // The frame is handed to the client queue: connected once the queue has handled it.
        while !client.status.isConnected { sched_yield() }
        _ = client.collection(BenchDocuments.collection)
        return (client, transport)
    }
}

extension InMemoryTransport {
    /// Delivers `frames`, then `ready` for `subscription`, and waits until it is ready: a subscription becomes ready
    /// only after everything received before its `ready` is in the cache.
    func deliver(_ frames: [String], thenReadyOf subscription: Subscription) {
        let start = Bench.now()
        for frame in frames { receive(frame) }
        if ProcessInfo.processInfo.environment["MDDP_TRACE"] != nil {
            print("handed over in \(Double(Bench.now() - start) / 1e6) ms")
        }
        receive(ServerMessage.ready(subscriptionIDs: [subscription.id]))
        let ready = DispatchSemaphore(value: 0)
        subscription.whenReady { _ in ready.signal() }
        ready.wait()
    }

    /// Waits until the client has asked for a connection (it does so on its own queue after `connect()`).
    func waitUntilOpenable(_ client: DDPClient) {
        while connectionAttempts == 0 { sched_yield() }
    }
}
