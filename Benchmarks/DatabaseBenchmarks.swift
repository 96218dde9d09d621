import DDPTestServer
import EJSON
import Foundation
import MeteorDDP

/// The local cache: apply throughput, read latency under write load, notification coalescing, memory per document.
enum DatabaseBenchmarks {
    static let documentCount = 100_000

    /// (a)–(c); (d) runs as the `memory` section, in a process of its own.
    static func run() {
        applyThroughput()
        readLatency()
        notificationsForABurst()
    }

    static func key(_ i: Int) -> DocumentKey { DocumentKey(collectionName: BenchDocuments.collection, documentID: BenchDocuments.id(i)) }

    /// (a) 100k adds then 900k two-field changes, in transactions of 1000, against the same into a Swift dictionary.
    static func applyThroughput() {
        Bench.section("Database (a): apply 1M mixed updates (100k added + 900k changed) in batches of 1000")
        let adds = (0..<documentCount).map { DataUpdate.added(key($0), BenchDocuments.fields($0)) }
        let changes = (0..<900_000).map { n -> DataUpdate in
            let i = n % documentCount
            return .changed(key(i), BenchDocuments.changedFields(n), cleared: [])
        }
        let all = adds + changes
        func applyAll(batch: Int) -> Double {
            Bench.medianSeconds(runs: 3) {
                let database = Database()
                var index = 0
                while index < all.count {
                    let end = min(index + batch, all.count)
                    database.apply(all[index..<end])
                    index = end
                }
            }
        }
        if ProcessInfo.processInfo.environment["MDDP_PROFILE_APPLY"] != nil {
            // Profiling aid: only our apply, repeated, so a profile shows nothing else.
            let rates = (0..<5).map { _ in Double(all.count) / applyAll(batch: 1000) / 1000 }
            print("apply (profiling), k updates/s:", rates.map { String(format: "%.0f", $0) }.joined(separator: " "))
            return
        }
        let ours = applyAll(batch: 1000)
        let large = applyAll(batch: 10_000)
        let baseline = Bench.medianSeconds(runs: 3) {
            var table: [String: [String: EJSONObject]] = [:]
            for update in all {
                switch update {
                case .added(let key, let fields): table[key.collectionName, default: [:]][key.documentID] = fields
                case .changed(let key, let fields, _):
                    for (name, value) in fields { table[key.collectionName]?[key.documentID]?[name] = value }
                default: break
                }
            }
            if table.isEmpty { print("") }
        }
        Bench.report("apply", ours: Double(all.count) / ours, baseline: Double(all.count) / baseline, unit: "updates/s",
                     baselineName: "plain Swift dictionary", target: "≥ 1M updates/s; Meteor JS: 76k added/s, ~100k changed/s")
        Bench.report("apply in batches of 10,000", ours: Double(all.count) / large, baseline: Double(all.count) / baseline, unit: "updates/s",
                     baselineName: "plain Swift dictionary")
        print(String(format: "apply vs Meteor's JS client anchor (76k docs/s): %.1fx", Double(all.count) / ours / 76_000))
    }

    /// (b) Reads from 2 threads with a writer applying 20k updates/s, against the same reads with no writer.
    static func readLatency() {
        Bench.section("Database (b): read latency from 2 reader threads, writer at 20k updates/s vs no writer")
        let database = Database()
        database.apply((0..<documentCount).map { .added(key($0), BenchDocuments.fields($0)) })
        func measure(withWriter: Bool) -> (p50: Double, p99: Double) {
            let stop = ManagedFlag()
            let writerDone = DispatchSemaphore(value: 0)
            if withWriter {
                Thread {
                    var n = 0
                    while !stop.isSet {
                        let start = DispatchTime.now()
                        database.performUpdates {
                            for _ in 0..<200 {
                                database.apply(.changed(key(n % documentCount), BenchDocuments.changedFields(n), cleared: []))
                                n += 1
                            }
                        }
                        // 200 updates every 10 ms = 20k updates/s.
                        let elapsed = DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds
                        if elapsed < 10_000_000 { usleep(UInt32((10_000_000 - elapsed) / 1000)) }
                    }
                    writerDone.signal()
                }.start()
            }
            let samples = SampleBox()
            let readersDone = DispatchSemaphore(value: 0)
            for reader in 0..<2 {
                Thread {
                    var local: [UInt64] = []
                    local.reserveCapacity(400_000)
                    var i = reader * 7919
                    let deadline = DispatchTime.now().uptimeNanoseconds + 1_000_000_000
                    while DispatchTime.now().uptimeNanoseconds < deadline {
                        let start = DispatchTime.now().uptimeNanoseconds
                        let document = database.document(key(i % documentCount))
                        let end = DispatchTime.now().uptimeNanoseconds
                        if document == nil { print("missing") }
                        local.append(end - start)
                        i &+= 104_729
                    }
                    samples.add(local)
                    readersDone.signal()
                }.start()
            }
            readersDone.wait()
            readersDone.wait()
            stop.set()
            if withWriter { writerDone.wait() }
            let sorted = samples.all.sorted()
            return (Double(sorted[sorted.count / 2]) / 1000, Double(sorted[sorted.count * 99 / 100]) / 1000)
        }
        let idle = measure(withWriter: false)
        let loaded = measure(withWriter: true)
        Bench.report("read p50 under write load", ours: loaded.p50, baseline: idle.p50, unit: "µs", baselineName: "no writer")
        Bench.report("read p99 under write load", ours: loaded.p99, baseline: idle.p99, unit: "µs", baselineName: "no writer",
                     target: "< 10 µs and within 2x of no writer")
    }

    /// (c) A 100k-update burst through the DataUpdateBuffer.
    static func notificationsForABurst() {
        Bench.section("Database (c): notifications for a 100k-update burst through the DataUpdateBuffer")
        let database = Database()
        let buffer = DataUpdateBuffer(database: database)
        let counter = NotificationCount(database: database)
        let start = DispatchTime.now()
        for i in 0..<100_000 { buffer.enqueue(.added(key(i), BenchDocuments.fields(i))) }
        let done = DispatchSemaphore(value: 0)
        buffer.performAfterFlush { done.signal() }
        done.wait()
        database.notificationQueue.sync {}
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        Bench.figure("notifications posted", Double(counter.count), unit: "", note: "target ≤ 10; 100k updates in \(String(format: "%.3f", seconds)) s")
    }

    /// (d) Resident memory per document at 100k documents, against the documents' JSON size.
    static func memoryPerDocument() {
        Bench.section("Database (d): resident memory per document at 100k documents of ~10 fields")
        let before = residentBytes()
        let database = Database()
        for batch in stride(from: 0, to: documentCount, by: 1000) {
            database.performUpdates {
                for i in batch..<(batch + 1000) { database.apply(.added(key(i), BenchDocuments.fields(i))) }
            }
        }
        let after = residentBytes()
        let jsonBytes = (0..<documentCount).reduce(0) { $0 + EJSON.serialize(.object(BenchDocuments.fields($1))).count }
        let perDocument = Double(after - before) / Double(documentCount)
        let jsonPerDocument = Double(jsonBytes) / Double(documentCount)
        Bench.report("memory per document", ours: perDocument, baseline: jsonPerDocument, unit: "bytes", baselineName: "its JSON",
                     target: "≤ 2x; Meteor JS: 3.65x")
        withExtendedLifetime(database) {}
    }

    /// (e) 1M documents in one collection against 100k: apply rate, memory per document and read latency (each
    /// size in a fresh `Database`; run as the `large` section, in a process of its own).
    static func largeCache() {
        Bench.section("Database (e): one collection of 1M documents vs 100k: apply rate, memory per document, read p99")
        func measure(_ count: Int) -> (rate: Double, bytesPerDocument: Double, readP99: Double, database: Database) {
            let before = residentBytes()
            let database = Database()
            // Only the applying is timed: each batch's updates are made first (the benchmark's own allocations).
            var nanoseconds: UInt64 = 0
            for batch in stride(from: 0, to: count, by: 1000) {
                let updates: [DataUpdate] = (batch..<(batch + 1000)).map { .added(key($0), BenchDocuments.fields($0)) }
                let start = Bench.now()
                database.apply(updates)
                nanoseconds += Bench.now() - start
            }
            let seconds = Double(nanoseconds) / 1e9
            let bytes = Double(residentBytes() - before) / Double(count)
            var samples: [Double] = []
            var state: UInt64 = 42
            for _ in 0..<100_000 {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                let i = Int(state >> 33) % count
                let t = Bench.now()
                let document = database.document(key(i))
                samples.append(Double(Bench.now() - t))
                precondition(document != nil)
            }
            samples.sort()
            return (Double(count) / seconds, bytes, samples[samples.count * 99 / 100] / 1000, database)
        }
        // MDDP_PROFILE_LARGE=N: only the N-document run (for a profiler), its rate printed.
        if let only = ProcessInfo.processInfo.environment["MDDP_PROFILE_LARGE"].flatMap(Int.init) {
            print("apply \(only) added, batches of 1000: \(Bench.format(measure(only).rate / 1000)) k docs/s")
            return
        }
        /// The same documents, packed the same way (`Document(id:fields:)`), into a plain Swift dictionary with no
        /// snapshots, transactions or notifications: how much of the 1M-vs-100k drop any hash table of documents has on
        /// this machine (at 1M the table and the documents no longer fit in the caches).
        func measureDictionary(_ count: Int) -> (rate: Double, dictionary: [DocumentKey: Document]) {
            var dictionary: [DocumentKey: Document] = [:]
            var nanoseconds: UInt64 = 0
            for batch in stride(from: 0, to: count, by: 1000) {
                let updates: [(DocumentKey, EJSONObject)] = (batch..<(batch + 1000)).map { (key($0), BenchDocuments.fields($0)) }
                let start = Bench.now()
                for (key, fields) in updates { dictionary[key] = Document(id: key.documentID, fields: fields) }
                nanoseconds += Bench.now() - start
            }
            return (Double(count) / (Double(nanoseconds) / 1e9), dictionary)
        }
        let small = measure(100_000)
        let smallRate = small.rate, smallBytes = small.bytesPerDocument, smallRead = small.readP99
        // The 100k cache stays alive: freed memory would be reused by the 1M one and hide its growth.
        let large = measure(1_000_000)
        Bench.report("apply 1M added, batches of 1000", ours: large.rate / 1000, baseline: smallRate / 1000, unit: "k docs/s",
                     baselineName: "100k", target: ">= 0.9x")
        // Measured after both caches, each kept alive likewise.
        let smallDictionary = measureDictionary(100_000)
        let largeDictionary = measureDictionary(1_000_000)
        Bench.report("reference: plain Swift dictionary, 1M packed documents", ours: largeDictionary.rate / 1000,
                     baseline: smallDictionary.rate / 1000, unit: "k docs/s", baselineName: "100k")
        withExtendedLifetime((smallDictionary.dictionary, largeDictionary.dictionary)) {}
        Bench.report("memory per document at 1M", ours: large.bytesPerDocument, baseline: smallBytes, unit: "bytes",
                     baselineName: "at 100k", target: "<= 1.1x")
        Bench.report("read by id p99 at 1M", ours: large.readP99, baseline: smallRead, unit: "µs", baselineName: "at 100k")
        withExtendedLifetime((small.database, large.database)) {}
    }

    static func residentBytes() -> Int {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let pages = statm.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

final class ManagedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var flag = false
    func set() { lock.withLock { flag = true } }
    var isSet: Bool { lock.withLock { flag } }
}

final class SampleBox: @unchecked Sendable {
    private let lock = NSLock()
    private var samples: [UInt64] = []
    func add(_ more: [UInt64]) { lock.withLock { samples += more } }
    var all: [UInt64] { lock.withLock { samples } }
}

final class NotificationCount: @unchecked Sendable {
    private let lock = NSLock()
    private var counted = 0
    private var observer: (any NSObjectProtocol)?
    init(database: Database) {
        observer = NotificationCenter.default.addObserver(forName: .databaseDidChange, object: database, queue: nil) { [weak self] _ in
            self?.lock.withLock { self?.counted += 1 }
        }
    }
    var count: Int { lock.withLock { counted } }
}
