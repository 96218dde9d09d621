import DDPTestServer
import Dispatch
import EJSON
import Foundation
import MeteorDDP

/// Mongo selectors against the same filters written as Swift closures, and a live query's incremental update
/// against re-running its query.
enum QueryBenchmarks {
    static let documentCount = 100_000

    static func run() {
        selectorVersusClosure()
        liveQueryUpdates()
        typedLiveQueryDecodes()
        collatedSort()
    }

    /// (d) Sorting 10k documents by a name under a collation (`{locale: "en", strength: 2}`, ICU as
    /// `Intl.Collator`) against the same sort without one (UTF-8 order), both through `find`.
    static func collatedSort() {
        Bench.section("Queries (d): find + sort 10k documents by name, collation {locale: en, strength: 2} vs none")
        let database = Database()
        let first = ["Émile", "zoë", "Åsa", "bob", "Chloé", "dmitri", "Ölof", "amélie", "Zacharias", "björn"]
        var generator = SystemRandomNumberGenerator()
        let letters = Array("abcdefghijklmnopqrstuvwxyzéèöü")
        database.apply(
            (0..<10_000).map { index -> DataUpdate in
                let suffix = String((0..<8).map { _ in letters.randomElement(using: &generator)! })
                let name = "\(first[index % first.count]) \(suffix)"
                return .added(DocumentKey(collectionName: "people", documentID: "p\(index)"), ["name": .string(name)])
            })
        let people = database.collection("people")
        let collated = FindOptions(sort: ["name": 1], collation: Collation(locale: "en", strength: 2))
        let plain = FindOptions(sort: ["name": 1])
        var ours = 0.0
        var baseline = 0.0
        for _ in 0..<3 {
            ours += Bench.medianSeconds(runs: 5) { _ = try! people.find([:], collated) }
            baseline += Bench.medianSeconds(runs: 5) { _ = try! people.find([:], plain) }
        }
        Bench.report(
            "sort 10k by name under a collation", ours: ours / 3 * 1000, baseline: baseline / 3 * 1000, unit: "ms",
            baselineName: "no collation", target: "<= 3x")
    }

    static func database(count: Int) -> Database {
        let database = Database()
        database.apply((0..<count).map { .added(DatabaseBenchmarks.key($0), BenchDocuments.fields($0)) })
        return database
    }

    /// (a) Filtering 100k documents: a compiled selector vs a closure testing the same fields.
    static func selectorVersusClosure() {
        Bench.section(
            "Queries (a): filter \(documentCount / 1000)k documents, selector vs the same filter as a Swift closure")
        let documents = database(count: documentCount).collection(BenchDocuments.collection).documents
        let cases: [(String, EJSONValue, @Sendable (Document) -> Bool)] = [
            (
                "{active: true, score: {$gte: 75000}}", ["active": true, "score": ["$gte": 75000]],
                { document in
                    document["active"] == true && (document["score"]?.doubleValue).map { $0 >= 75000 } == true
                }
            ),
            (
                "{\"location.city\": \"Berlin\", tags: \"tag3\"}", ["location.city": "Berlin", "tags": "tag3"],
                { document in
                    document["location"]?["city"] == "Berlin"
                        && (document["tags"]?.arrayValue?.contains("tag3") ?? false)
                }
            ),
            (
                "{name: {$in: [3 names]}}",
                ["name": ["$in": ["Document number 7", "Document number 70", "Document number 700"]]],
                { document in
                    guard case .string(let name)? = document["name"] else { return false }
                    return ["Document number 7", "Document number 70", "Document number 700"].contains(name)
                }
            )
        ]
        for (name, selectorValue, closure) in cases {
            let selector = try! MongoSelector(selectorValue)
            precondition(
                documents.filter(selector.matches).count == documents.filter(closure).count,
                "\(name): different results")
            var ours = 0.0
            var baseline = 0.0
            // Interleaved, so both see the same machine.
            for _ in 0..<3 {
                ours += Bench.medianSeconds(runs: 3) { _ = documents.filter(selector.matches) }
                baseline += Bench.medianSeconds(runs: 3) { _ = documents.filter(closure) }
            }
            Bench.report(
                "selector \(name)", ours: ours / 3 * 1000, baseline: baseline / 3 * 1000, unit: "ms",
                baselineName: "closure", target: "<= 1.5x")
        }
    }

    /// (b) A live query of 10k matching documents (sorted, limit 100) receiving single-document changes that move a
    /// document into its window: per-change cost from the write to the handler, vs re-running the query.
    static func liveQueryUpdates() {
        Bench.section(
            "Queries (b): live query, 10k matching of 20k (sorted by score, limit 100), single-document changes")
        let database = database(count: 20_000)
        let collection = database.collection(BenchDocuments.collection)
        let selector: EJSONValue = ["active": true]
        let options = FindOptions(sort: ["score": -1], limit: 100)
        let live = try! collection.observe(selector, options)
        let delivered = DispatchSemaphore(value: 0)
        let token = live.onChange(on: DispatchQueue(label: "bench.onChange")) { _ in delivered.signal() }
        delivered.wait() // the initial snapshot
        var samples: [Double] = []
        for n in 0..<2_000 {
            let i = (n * 2) % 20_000 // an active (even) document
            let start = Bench.now()
            database.apply(.changed(DatabaseBenchmarks.key(i), ["score": .number(1e9 + Double(n))], cleared: []))
            delivered.wait()
            samples.append(Double(Bench.now() - start) / 1000)
        }
        token.cancel()
        live.stop()
        samples.sort()
        let p50 = samples[samples.count / 2]
        let p99 = samples[samples.count * 99 / 100]
        let rerun = Bench.medianSeconds(runs: 9) { _ = try! collection.find(selector, options) } * 1e6
        Bench.figure("per change, write to handler, p50", p50, unit: "µs")
        Bench.figure("per change, write to handler, p99", p99, unit: "µs")
        Bench.report(
            "re-running the query (filter, sort, limit)", ours: rerun, baseline: p99, unit: "µs",
            baselineName: "incremental update p99", target: ">= 50x")
    }

    /// (c) A typed live query of 10k documents: decoded values per change, against the documents each change touched.
    static func typedLiveQueryDecodes() {
        Bench.section("Queries (c): typed live query of 10k documents, 1000 transactions of 1 to 5 changed documents")
        struct Model: Decodable, Sendable {
            var index: Int
            var name: String
            var score: Double
        }
        let database = database(count: 10_000)
        let live = TypedLiveQuery<Model>(
            try! database.collection(BenchDocuments.collection).observe([:], FindOptions(sort: ["score": -1])))
        let done = DispatchSemaphore(value: 0)
        let collector = Task {
            var iterator = live.snapshots.makeAsyncIterator()
            while let snapshot = try? await iterator.next(), !snapshot.values.contains(where: { $0.name == "last" }) {}
            done.signal()
        }
        while live.decodeCount < 10_000 { usleep(1_000) } // the first snapshot (benchmark setup, not a test)
        let initial = live.decodeCount
        var changedDocuments = 0
        for n in 0..<1_000 {
            let touched = 1 + n % 5
            changedDocuments += touched
            database.apply(
                (0..<touched).map { k in
                    .changed(
                        DatabaseBenchmarks.key((n * 7 + k * 1_013) % 10_000), ["score": .number(Double(n * 10 + k))],
                        cleared: [])
                })
        }
        database.apply(.changed(DatabaseBenchmarks.key(0), ["name": "last"], cleared: []))
        changedDocuments += 1
        _ = done.wait(timeout: .now() + 60)
        collector.cancel()
        // A slow consumer skips snapshots (it gets the newest): decodes can be fewer than changed documents, never
        // more.
        Bench.figure("documents decoded for the first snapshot", Double(initial), unit: "decodes")
        Bench.report(
            "documents decoded for 1001 transactions", ours: Double(live.decodeCount - initial),
            baseline: Double(changedDocuments),
            unit: "decodes", baselineName: "documents changed", target: "<= 1.0x (one decode per changed document)")
        live.stop()
    }
}
