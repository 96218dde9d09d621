import EJSON
import XCTest

@testable import MeteorDDP

/// A live query's results, kept up to date change by change (binary search for a few changes, one merge for many),
/// always equal the query evaluated from scratch.
final class LiveQueryIncrementalTests: XCTestCase {
    private struct Generator {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
    }

    private func check(_ query: Query, seed: UInt64) {
        let database = Database()
        let live = database.collection("c").observe(query)
        var random = Generator(state: seed)
        for round in 0..<60 {
            // Batches of 1 to 300 changes: both ways of updating the results are used.
            let batch = [1, 3, 20, 64, 65, 300][random.next(6)]
            database.performUpdates {
                for _ in 0..<batch {
                    let key = DocumentKey(collectionName: "c", documentID: "d\(random.next(400))")
                    switch random.next(4) {
                    case 0: database.apply(.removed(key))
                    case 1: database.apply(.changed(key, ["group": .number(Double(random.next(3)))], cleared: []))
                    default:
                        database.apply(
                            .added(
                                key,
                                ["score": .number(Double(random.next(50))), "group": .number(Double(random.next(3)))]))
                    }
                }
            }
            database.waitUntilDelivered()
            let expected = query.evaluate(database.snapshot.allDocuments(in: "c"))
            XCTAssertEqual(live.documents.map(\.id), expected.map(\.id), "round \(round)")
            XCTAssertEqual(live.documents, expected, "round \(round)")
        }
        live.stop()
    }

    func testResultsEqualAFreshEvaluationAfterEveryCommit() {
        let query = Query(filter: { $0["group"]?.doubleValue != 2 }, sort: [.descending("score")])
        for seed: UInt64 in [1, 2, 3] { check(query, seed: seed) }
    }

    func testLimitedResultsEqualAFreshEvaluationAfterEveryCommit() {
        let query = Query(filter: { $0["group"]?.doubleValue != 1 }, sort: [.ascending("score")], limit: 25)
        for seed: UInt64 in [4, 5] { check(query, seed: seed) }
    }
}
