import EJSON
import XCTest

@testable import MeteorDDP

/// A server cannot fill memory with collections the app never declared: their documents are cached up to
/// `maxDocumentsInUndeclaredCollections` in all; declared collections have no limit.
final class UndeclaredCollectionsTests: XCTestCase {
    private func count(_ harness: ClientHarness, _ collection: String) -> Int {
        harness.client.database.snapshot.documentCount(in: collection)
    }

    func testDocumentsOfUndeclaredCollectionsStopAtTheLimitAndAreReportedOnce() async throws {
        let harness = ClientHarness { $0.maxDocumentsInUndeclaredCollections = 2 }
        harness.establishConnection()
        let errors = harness.client.errors
        let allErrors = harness.client.errors
        let firstReport = Task { await errors.first { $0.code == .limitReached } }
        for id in ["a", "b", "c", "d"] { harness.receive(.added(collection: "spam", id: id, fields: ["n": 1])) }
        harness.receive(.changed(collection: "spam", id: "c", fields: ["n": 2], cleared: []))
        harness.flushData()
        XCTAssertEqual(count(harness, "spam"), 2)
        XCTAssertNil(harness.document("spam", "c"))
        let report = try await value(of: firstReport, within: 5)
        XCTAssertEqual(report?.code, .limitReached)
        XCTAssertTrue(report?.message.contains("\"spam\"") ?? false, report?.message ?? "")
        // A removed document frees its place.
        harness.receive(.removed(collection: "spam", id: "a"))
        harness.receive(.added(collection: "spam", id: "e", fields: [:]))
        harness.flushData()
        XCTAssertEqual(Set(harness.client.database.snapshot.allDocuments(in: "spam").map(\.id)), ["b", "e"])
        harness.client.close()
        let reports = Task { await allErrors.reduce(0) { $1.code == .limitReached ? $0 + 1 : $0 } }
        let reportCount = try await value(of: reports, within: 5)
        XCTAssertEqual(reportCount, 1, "reported once per collection")
    }

    func testDeclaredCollectionsHaveNoLimit() {
        let harness = ClientHarness { $0.maxDocumentsInUndeclaredCollections = 2 }
        _ = harness.client.collection("todos")
        harness.establishConnection()
        for index in 0..<10 { harness.receive(.added(collection: "todos", id: "t\(index)", fields: [:])) }
        harness.flushData()
        XCTAssertEqual(count(harness, "todos"), 10)
    }

    func testDeclaringACollectionLiftsItsLimit() {
        let harness = ClientHarness { $0.maxDocumentsInUndeclaredCollections = 1 }
        harness.establishConnection()
        harness.receive(.added(collection: "late", id: "1", fields: [:]))
        harness.receive(.added(collection: "late", id: "2", fields: [:]))
        _ = harness.client.collection("late")
        harness.receive(.added(collection: "late", id: "3", fields: [:]))
        harness.receive(.added(collection: "other", id: "1", fields: [:]))
        harness.flushData()
        XCTAssertEqual(Set(harness.client.database.snapshot.allDocuments(in: "late").map(\.id)), ["1", "3"])
        XCTAssertEqual(count(harness, "other"), 1, "the declared collection's documents no longer count")
    }

    /// The last declared name is remembered (a flood names one collection): frames alternating between a declared and
    /// an undeclared collection still drop the undeclared one's past the limit.
    func testAlternatingDeclaredAndUndeclaredCollections() {
        var collections = UndeclaredCollections(limit: 1)
        collections.declare("todos")
        XCTAssertEqual(collections.added("todos", "t1"), .apply)
        XCTAssertEqual(collections.added("spam", "s1"), .apply, "the first undeclared document fits the limit")
        XCTAssertEqual(collections.changed("todos", "t1"), .apply)
        XCTAssertEqual(collections.added("spam", "s2"), .dropAndReport)
        XCTAssertEqual(collections.changed("todos", "t2"), .apply)
        XCTAssertEqual(collections.changed("spam", "s2"), .drop)
        XCTAssertEqual(collections.changed("spam", "s1"), .apply)
        XCTAssertEqual(collections.removed("todos", "t1"), .apply)
        XCTAssertEqual(collections.removed("spam", "s2"), .drop)
        // An equal name in another string is the same collection.
        XCTAssertEqual(collections.changed(String("todos".reversed().reversed()), "t3"), .apply)
        XCTAssertEqual(collections.changed("todos2", "t3"), .drop)
    }
}
