import EJSON
import TestSupport
import XCTest

@_spi(Testing) @testable import MeteorDDP

/// A live related query against the same query evaluated from scratch, over random transactions on both sides: after
/// each transaction its result equals a fresh ``Relationship/find(_:_:relatedOptions:)``, and each snapshot's diff
/// turns the previous result into the new one.
final class RelatedLiveQueryModelTests: XCTestCase {
    private struct Item: Codable, Sendable, Equatable {
        var _id: String?
        var name: String
    }

    private enum Shape: CaseIterable { case toOne, inverse, manyToMany }

    func testRandomTransactionsKeepTheLiveResultEqualToAFreshEvaluation() throws {
        continueAfterFailure = false
        let seed = UInt64.random(in: 0...UInt64.max)
        var random = SplitMix64(seed: seed)
        for shape in Shape.allCases {
            for windowed in [false, true] {
                try check(shape, windowed: windowed, rounds: 150, &random, seed: seed)
            }
        }
    }

    private func check(_ shape: Shape, windowed: Bool, rounds: Int, _ random: inout SplitMix64, seed: UInt64) throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let sources = harness.client.collection("sources", as: Item.self)
        let targets = harness.client.collection("targets", as: Item.self)
        let relationship: Relationship<Item, Item>
        switch shape {
        case .toOne: relationship = sources.toOne(targets, idIn: "ref")
        case .inverse: relationship = sources.toMany(targets, referencedBy: "ref")
        case .manyToMany: relationship = sources.toMany(targets, idsIn: "refs")
        }
        let options = windowed ? FindOptions(sort: ["name": 1], skip: 1, limit: 4) : FindOptions(sort: ["name": -1])
        let relatedOptions = windowed ? FindOptions(sort: ["name": 1], limit: 2) : FindOptions(sort: ["name": -1])
        let selector: EJSONValue = ["hidden": ["$ne": true]]
        let live = try relationship.observe(selector, options, relatedOptions: relatedOptions)
        let queue = DispatchQueue(label: "test.related.model")
        let received = SnapshotLog()
        let token = live.onChange(on: queue) { received.append($0) }
        defer {
            token.cancel()
            live.stop()
        }
        var present: [String: Set<String>] = ["sources": [], "targets": []]
        func randomID(_ prefix: String, _ random: inout SplitMix64) -> String { "\(prefix)\(random.next(below: 8))" }
        func reference(_ random: inout SplitMix64) -> EJSONValue {
            random.next(below: 6) == 0 ? .null : .string(randomID("t", &random))
        }
        for round in 0..<rounds {
            for _ in 0...random.next(below: 4) {
                let isSource = random.next(below: 2) == 0
                let collection = isSource ? "sources" : "targets"
                let id = randomID(isSource ? "s" : "t", &random)
                var fields: EJSONObject = ["name": .string("n\(random.next(below: 5))")]
                if random.next(below: 5) == 0 { fields["hidden"] = true }
                if isSource, shape != .inverse {
                    fields["ref"] = reference(&random)
                    fields["refs"] = .array((0..<random.next(below: 4)).map { _ in reference(&random) })
                } else if !isSource, shape == .inverse {
                    fields["ref"] = .string(randomID("s", &random))
                }
                if present[collection]!.contains(id) {
                    if random.next(below: 3) == 0 {
                        harness.receive(.removed(collection: collection, id: id))
                        present[collection]!.remove(id)
                    } else {
                        harness.receive(.changed(collection: collection, id: id, fields: fields, cleared: []))
                    }
                } else {
                    harness.receive(.added(collection: collection, id: id, fields: fields))
                    present[collection]!.insert(id)
                }
            }
            harness.flushData()
            queue.sync {}
            let expected = try relationship.find(selector, options, relatedOptions: relatedOptions)
            let context = "seed \(seed), \(shape), windowed \(windowed), round \(round)"
            let log = received.snapshots
            guard let last = log.last else { return XCTFail("no snapshot: \(context)") }
            XCTAssertEqual(last.entries.map(\.source.id), expected.map(\.id), context)
            XCTAssertEqual(
                last.entries.map { $0.related.map(\.id) }, expected.map { $0.related.map { $0._id ?? "" } }, context)
            XCTAssertEqual(last.entries.map { $0.source["name"] }, expected.map { .string($0.value.name) }, context)
        }
        // Every snapshot's diff turns the one before into it; none is empty but the first.
        let log = received.snapshots
        for (before, after) in zip(log, log.dropFirst()) {
            let old = before.entries.map(\.source.id)
            let new = after.entries.map(\.source.id)
            XCTAssertFalse(after.diff.isEmpty, "seed \(seed): a snapshot that changed nothing")
            XCTAssertEqual(Self.apply(after.diff, to: old, giving: new), new, "seed \(seed), \(shape)")
            // Entries kept in place whose content changed are reported updated.
            let oldByID = Dictionary(uniqueKeysWithValues: zip(old, before.entries))
            for (index, entry) in after.entries.enumerated() {
                guard let previous = oldByID[entry.source.id], !previous.isSame(as: entry) else { continue }
                XCTAssertTrue(after.diff.updated.contains(index), "seed \(seed), \(shape): a change not reported")
            }
        }
    }

    /// The ids a diff gives when applied to `old` (removals and moves' origins in the old indexes, insertions and
    /// moves' destinations in the new ones), taking inserted ids from `new`.
    private static func apply(_ diff: LiveQueryDiff, to old: [String], giving new: [String]) -> [String] {
        var result = [String?](repeating: nil, count: new.count)
        for index in diff.inserted where index < result.count { result[index] = new[index] }
        for move in diff.moved where move.to < result.count { result[move.to] = old[move.from] }
        let gone = Set(diff.removed + diff.moved.map(\.from))
        var staying = old.enumerated().filter { !gone.contains($0.offset) }.map(\.element).makeIterator()
        for index in result.indices where result[index] == nil { result[index] = staying.next() }
        return result.map { $0 ?? "?" }
    }
}

/// The snapshots a handler received, in order.
private final class SnapshotLog: @unchecked Sendable {
    // @unchecked because `log` is protected by `lock`.
    private let lock = NSLock()
    private var log: [RelatedSnapshot] = []
    var snapshots: [RelatedSnapshot] { lock.withLock { log } }
    func append(_ snapshot: RelatedSnapshot) { lock.withLock { log.append(snapshot) } }
}
