import Dispatch
import EJSON
import Foundation
import MeteorDDP

/// A live related query (1,000 lists, each with its 10 todos) against a single-collection live query of the same
/// 10,000 todos: the cost of one todo's change from the write to the decoded snapshot, the decodes it takes, and the
/// heap the result holds against the two separate results.
enum RelationshipBenchmarks {
    struct TodoList: Codable, Sendable {
        var _id: String?
        var name: String
    }

    struct Todo: Codable, Sendable {
        var _id: String?
        var listId: String
        var text: String
        var rank: Int
    }

    static let listCount = 1_000
    static let todosPerList = 10

    static func run() {
        let client = DDPClient(url: URL(string: "ws://127.0.0.1:9/websocket")!) // never connected
        load(client.database)
        if let run = ProcessInfo.processInfo.environment["MDDP_RELATED_MEMORY"] {
            return measureMemory(run, client: client)
        }
        Bench.section("Relationships: 1,000 lists each with its 10 todos, one todo changed per transaction")
        latency(client)
        memory()
    }

    /// 1,000 lists and 10,000 todos, ten in each list.
    static func load(_ database: Database) {
        database.performUpdates {
            for list in 0..<listCount {
                database.apply(.added(key("lists", "l\(list)"), ["name": .string("list \(list)")]))
                for todo in 0..<todosPerList {
                    let index = list * todosPerList + todo
                    database.apply(
                        .added(
                            key("todos", "t\(index)"),
                            ["listId": .string("l\(list)"), "text": .string("todo \(index)"), "rank": .number(0)]))
                }
            }
        }
    }

    /// One todo changed per transaction, from the write to the decoded snapshot, and the decodes it takes: the
    /// related result against a live query of the 10,000 todos.
    static func latency(_ client: DDPClient) {
        let database = client.database
        let lists = client.collection("lists", as: TodoList.self)
        let todos = client.collection("todos", as: Todo.self)
        let todosOfList = lists.toMany(todos, referencedBy: "listId")
        let options = FindOptions(sort: ["name": 1])
        let relatedOptions = FindOptions(sort: ["text": 1])

        // Latency: the two live queries take turns (never both live, so neither pays for the other's update).
        var related: [Double] = []
        var single: [Double] = []
        var relatedDecodes = 0
        var changes = 0
        var rank = 0
        for _ in 0..<5 {
            let ours = try! todosOfList.observe([:], options, relatedOptions: relatedOptions)
            let before = firstDecodes(of: ours.snapshots)
            let decodedBefore = ours.decodeCount
            precondition(before == listCount, "the first snapshot")
            related += measure(ours.snapshots, database: database, rank: &rank, count: 200)
            relatedDecodes += ours.decodeCount - decodedBefore
            changes += 200
            ours.stop()
            let baseline = try! todos.observe([:], FindOptions(sort: ["text": 1]))
            precondition(firstDecodes(of: baseline.snapshots) == listCount * todosPerList, "the first snapshot")
            single += measure(baseline.snapshots, database: database, rank: &rank, count: 200)
            baseline.stop()
        }
        related.sort()
        single.sort()
        let p50 = { (samples: [Double]) in samples[samples.count / 2] }
        let p99 = { (samples: [Double]) in samples[samples.count * 99 / 100] }
        Bench.report(
            "one todo changed, write to decoded snapshot, p50", ours: p50(related), baseline: p50(single), unit: "µs",
            baselineName: "live query of the 10k todos")
        Bench.report(
            "one todo changed, write to decoded snapshot, p99", ours: p99(related), baseline: p99(single), unit: "µs",
            baselineName: "live query of the 10k todos", target: "<= 2x")
        Bench.report(
            "documents decoded per transaction", ours: Double(relatedDecodes) / Double(changes), baseline: 1,
            unit: "decodes", baselineName: "documents changed", target: "<= 1.0x")
    }

    /// The resident memory the related result holds (its live query seeded and its first snapshot decoded and
    /// kept) against the two separate results, each measured in a fresh process after the same data was loaded
    /// (`MDDP_RELATED_MEMORY=ours|separate`), three rounds taking turns, medians.
    static func memory() {
        var figures: [String: [Double]] = [:]
        for _ in 0..<3 {
            for run in ["ours", "separate"] {
                guard
                    let bytes = Bench.runInFreshProcess(
                        section: "relationships", environment: ["MDDP_RELATED_MEMORY": run], prefix: "related-memory"
                    )?.first
                else { return print("the memory run \(run) failed") }
                figures[run, default: []].append(bytes)
            }
        }
        let median = { (run: String) in figures[run]!.sorted()[1] / 1024 }
        Bench.report(
            "resident memory held by the result (live query and its decoded snapshot)", ours: median("ours"),
            baseline: median("separate"), unit: "KiB", baselineName: "the two separate results", target: "<= 1.2x")
    }

    /// One memory measurement, for the parent: `related-memory <bytes>`.
    static func measureMemory(_ run: String, client: DDPClient) {
        let lists = client.collection("lists", as: TodoList.self)
        let todos = client.collection("todos", as: Todo.self)
        let options = FindOptions(sort: ["name": 1])
        let relatedOptions = FindOptions(sort: ["text": 1])
        let before = DatabaseBenchmarks.residentBytes()
        let held: Any
        if run == "ours" {
            let ours = try! lists.toMany(todos, referencedBy: "listId").observe(
                [:], options, relatedOptions: relatedOptions)
            held = (ours, first(of: ours.snapshots) as Any)
        } else {
            let listQuery = try! lists.observe([:], options)
            let todoQuery = try! todos.observe([:], relatedOptions)
            held = (listQuery, todoQuery, first(of: listQuery.snapshots) as Any, first(of: todoQuery.snapshots) as Any)
        }
        print("related-memory \(DatabaseBenchmarks.residentBytes() - before)")
        withExtendedLifetime(held) {}
    }

    static func key(_ collection: String, _ id: String) -> DocumentKey {
        DocumentKey(collectionName: collection, documentID: id)
    }

    /// Waits for a sequence's first element (benchmark setup, on a task of its own).
    static func first<S: AsyncSequence & Sendable>(of sequence: S) -> S.Element? where S.Element: Sendable {
        let box = ResultBox<S.Element>()
        let done = DispatchSemaphore(value: 0)
        Task {
            var iterator = sequence.makeAsyncIterator()
            box.value = try? await iterator.next()
            done.signal()
        }
        done.wait()
        return box.value
    }

    static func firstDecodes<Source, Target>(of snapshots: RelatedLiveQuerySnapshots<Source, Target>) -> Int {
        first(of: snapshots)?.values.count ?? 0
    }

    static func firstDecodes<Model>(
        of snapshots: AsyncThrowingMapSequence<LiveQuerySnapshots, TypedLiveQuerySnapshot<Model>>
    )
        -> Int
    {
        first(of: snapshots)?.values.count ?? 0
    }

    /// Changes one todo per transaction (its rank, keeping its list and place) and measures the time from the write
    /// to the consumer holding the decoded snapshot, in µs.
    static func measure<S: AsyncSequence & Sendable>(
        _ snapshots: S, database: Database, rank: inout Int, count: Int
    ) -> [Double] where S.Element: Sendable {
        let delivered = DispatchSemaphore(value: 0)
        let consumer = Task {
            var iterator = snapshots.makeAsyncIterator()
            _ = try? await iterator.next() // the current result
            delivered.signal()
            while (try? await iterator.next()) != nil { delivered.signal() }
        }
        delivered.wait()
        var samples: [Double] = []
        for n in 0..<count {
            rank += 1
            let index = (n * 7_919) % (listCount * todosPerList)
            let start = Bench.now()
            database.apply(.changed(key("todos", "t\(index)"), ["rank": .number(Double(rank))], cleared: []))
            delivered.wait()
            samples.append(Double(Bench.now() - start) / 1000)
        }
        consumer.cancel()
        return samples
    }
}

private final class ResultBox<Value>: @unchecked Sendable {
    // @unchecked because the writer signals a semaphore the reader waits on before reading.
    var value: Value?
}
