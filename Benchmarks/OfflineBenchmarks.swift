import DDPTestServer
import EJSON
import Foundation
import MeteorDDP
import MeteorDDPTesting
import NIOConcurrencyHelpers

/// The offline store (SQLite): write-behind against ingest without it, restore against applying from memory,
/// stub → notification and call → on disk, and the file's size per document.
enum OfflineBenchmarks {
    static let count = 100_000

    static func run() async {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "mddp-offline-bench-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = await writeBehind(directory)
        restore(file)
        await durableCalls(directory)
    }

    /// In-process ingest of 100k `added` frames until ready, with and without the store (interleaved, median of 5),
    /// then until the file is complete.
    static func writeBehind(_ directory: URL) async -> URL {
        Bench.section("Offline: 100k `added` → cache → ready, with the SQLite store writing behind vs without")
        let frames = (0..<count).map(BenchDocuments.addedFrame)
        var without: [Double] = []
        var with: [Double] = []
        var onDisk: [Double] = []
        var file = directory.appendingPathComponent("ingest-0.sqlite")
        for run in 0..<5 {
            let (plain, plainClient) = ingest(frames, persistence: nil)
            without.append(plain.seconds)
            plainClient.close()
            file = directory.appendingPathComponent("ingest-\(run).sqlite")
            let (ready, client) = ingest(frames, persistence: .sqlite(at: file))
            await client.flushStore()
            onDisk.append(Double(Bench.now() - ready.start) / 1e9)
            with.append(ready.seconds)
            client.close()
        }
        let off = without.sorted()[2]
        Bench.report(
            "added → ready, store on", ours: Double(count) / with.sorted()[2], baseline: Double(count) / off,
            unit: "docs/s",
            baselineName: "store off", target: "≥ 0.8x")
        Bench.report(
            "added → ready and on disk", ours: Double(count) / onDisk.sorted()[2], baseline: Double(count) / off,
            unit: "docs/s",
            baselineName: "store off (ready)")
        let stored = (try? SQLiteStore(fileURL: file).load().documents.count) ?? -1
        print("documents in the file at the end: \(stored) of \(count)")
        precondition(stored == count, "the store's file is incomplete once the client said everything was on disk")
        let bytes = ["", "-wal"].reduce(0) { sum, suffix in
            sum
                + ((try? FileManager.default.attributesOfItem(atPath: file.path + suffix)[.size] as? NSNumber)?.intValue
                    ?? 0)
        }
        let json =
            (0..<1_000).map { EJSON.stringify(.object(BenchDocuments.fields($0))).utf8.count }.reduce(0, +) / 1_000
        Bench.figure(
            "file size per document (file + WAL)", Double(bytes) / Double(count), unit: "bytes",
            note: String(
                format: "its fields as JSON: %d bytes (%.2fx)", json, Double(bytes) / Double(count) / Double(json)))
        return file
    }

    /// One ingest; `ready` is measured from the first frame to readiness.
    static func ingest(_ frames: [String], persistence: Persistence?) -> (
        ready: (start: UInt64, seconds: Double), client: DDPClient
    ) {
        var configuration = DDPClient.Configuration()
        configuration.persistence = persistence
        let (client, transport) = DDPClient.connectedInMemory(configuration: configuration)
        let sub = client.subscribe("bench")
        let start = Bench.now()
        transport.deliver(frames, thenReadyOf: sub)
        let seconds = Double(Bench.now() - start) / 1e9
        precondition(client.database.collection(BenchDocuments.collection).count == count)
        return ((start, seconds), client)
    }

    /// A new client restoring the file, against applying the same documents to a cache from memory.
    static func restore(_ file: URL) {
        Bench.section("Offline: restore 100k documents from disk into the cache (before connecting)")
        let documents = (0..<count).map { n in
            DataUpdate.added(
                DocumentKey(collectionName: BenchDocuments.collection, documentID: BenchDocuments.id(n)),
                BenchDocuments.fields(n))
        }
        var restores: [Double] = []
        var applies: [Double] = []
        for _ in 0..<3 {
            let start = Bench.now()
            var configuration = DDPClient.Configuration()
            configuration.persistence = .sqlite(at: file)
            let client = DDPClient(transport: InMemoryTransport(), configuration: configuration)
            restores.append(Double(Bench.now() - start) / 1e9)
            precondition(
                client.database.collection(BenchDocuments.collection).count == count, "restored \(client.restoreReport)"
            )
            client.close()
            let database = Database()
            let applyStart = Bench.now()
            database.apply(documents)
            applies.append(Double(Bench.now() - applyStart) / 1e9)
        }
        let loadStart = Bench.now()
        let loaded = (try? SQLiteStore(fileURL: file).load().documents.count) ?? 0
        Bench.figure(
            "of which reading and parsing the file", Double(Bench.now() - loadStart) / 1e6, unit: "ms",
            note: "\(loaded) documents")
        let restore = restores.sorted()[1]
        Bench.figure("restore 100k documents", restore * 1000, unit: "ms", note: "target ≤ 500 ms")
        Bench.report(
            "restore", ours: Double(count) / restore, baseline: Double(count) / applies.sorted()[1], unit: "docs/s",
            baselineName: "applying them from memory")
    }

    /// Stub → notification with the store on (the disk write is behind), and call → frame sent (a call goes out
    /// only once it is on disk), one call at a time; then a burst of 1,000 calls until all are sent.
    static func durableCalls(_ directory: URL) async {
        Bench.section("Offline: durable calls (stub → notification, call → on disk and sent)")
        let transport = SendTimingTransport()
        var configuration = DDPClient.Configuration()
        configuration.persistence = .sqlite(at: directory.appendingPathComponent("calls.sqlite"))
        let client = DDPClient(transport: transport, configuration: configuration)
        client.defineStub("add") { context in
            try context.collection("items").insert(["n": context.params[0] ?? nil]).map { .string($0) }
        }
        client.connect()
        transport.inner.waitUntilOpenable(client)
        transport.inner.open()
        transport.inner.receive(#"{"msg":"connected","session":"bench"}"#)
        while !client.status.isConnected { sched_yield() }
        let delivered = DispatchSemaphore(value: 0)
        let deliveredAt = NIOLockedValueBox<UInt64>(0)
        let observer = NotificationCenter.default.addObserver(
            forName: .databaseDidChange, object: client.database, queue: nil
        ) { _ in
            deliveredAt.withLockedValue { $0 = Bench.now() }
            delivered.signal()
        }
        var notification: [Double] = []
        var toDisk: [Double] = []
        for n in 0..<3_000 {
            let start = Bench.now()
            _ = try? client.call("add", params: [.number(Double(n))]) { _ in }
            delivered.wait()
            transport.sent.wait()
            notification.append(Double(deliveredAt.withLockedValue { $0 } - start) / 1000)
            toDisk.append(Double(transport.lastSentAt - start) / 1000)
        }
        NotificationCenter.default.removeObserver(observer)
        notification.sort()
        toDisk.sort()
        Bench.figure("stub → notification p50, store on", notification[notification.count / 2], unit: "µs")
        Bench.figure(
            "stub → notification p99, store on", notification[notification.count * 99 / 100], unit: "µs",
            note: "target < 200 µs")
        Bench.figure("call → on disk and sent p50", toDisk[toDisk.count / 2], unit: "µs")
        Bench.figure("call → on disk and sent p99", toDisk[toDisk.count * 99 / 100], unit: "µs")
        let burstStart = Bench.now()
        for n in 0..<1_000 { _ = try? client.call("add", params: [.number(Double(n))]) { _ in } }
        for _ in 0..<1_000 { transport.sent.wait() }
        let burst = Double(Bench.now() - burstStart) / 1e9
        Bench.figure(
            "burst of 1,000 calls until all on disk and sent", burst * 1000, unit: "ms",
            note: String(format: "%.0f calls/s (group commit)", 1_000 / burst))
        client.close()
    }
}

/// An in-memory transport that notes when each `method` frame leaves the client.
final class SendTimingTransport: Transport, @unchecked Sendable {
    let inner = InMemoryTransport()
    /// Signalled once per method frame sent.
    let sent = DispatchSemaphore(value: 0)
    private let lastSent = NIOLockedValueBox<UInt64>(0)
    var lastSentAt: UInt64 { lastSent.withLockedValue { $0 } }

    func connect(onEvent: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
        Connection(inner: inner.connect(onEvent: onEvent), owner: self)
    }

    final class Connection: TransportConnection, @unchecked Sendable {
        let inner: any TransportConnection
        unowned let owner: SendTimingTransport

        init(inner: any TransportConnection, owner: SendTimingTransport) {
            self.inner = inner
            self.owner = owner
        }

        func send(_ frame: String) {
            inner.send(frame)
            if frame.hasPrefix(#"{"msg":"method""#) {
                owner.lastSent.withLockedValue { $0 = Bench.now() }
                owner.sent.signal()
            }
        }

        func close() { inner.close() }
    }
}
