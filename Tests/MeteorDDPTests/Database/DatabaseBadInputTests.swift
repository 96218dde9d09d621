import EJSON
import Logging
import TestSupport
import XCTest

@testable import MeteorDDP

/// Updates that do not fit the cache are applied with Meteor's tolerance, each anomaly logged, nothing else lost.
final class DatabaseBadInputTests: XCTestCase {
    private let lovelace = DocumentKey(collectionName: "players", documentID: "lovelace")
    private let nobody = DocumentKey(collectionName: "players", documentID: "nobody")

    func testEveryToleratedAnomalyIsLoggedWithTheDocumentKey() {
        let log = LogRecorder()
        let database = Database(logger: log.logger)
        database.apply(.added(lovelace, ["score": 25]))
        XCTAssertEqual(log.lines, [], "a regular add logs nothing")
        database.apply(.added(lovelace, ["score": 26]))
        database.apply(.changed(nobody, ["score": 1], cleared: []))
        database.apply(.removed(DocumentKey(collectionName: "players", documentID: "ghost")))
        XCTAssertEqual(log.lines.count, 3)
        XCTAssertTrue(log.lines[0].contains("players/lovelace"))
        XCTAssertTrue(log.lines[1].contains("players/nobody"))
        XCTAssertTrue(log.lines[2].contains("players/ghost"))
    }

    /// A log handler is app code: the anomalies a batch tolerated are logged once its transaction has committed, not
    /// while the batch holds the open transaction (a handler reading the cache there broke the exclusive access to
    /// it) nor under the write lock.
    func testAnomaliesAreLoggedAfterTheCommitWhereTheLogHandlerMayReadTheCache() {
        let databaseBox = Locked<Database?>(nil)
        let seen = Locked<[(inTransaction: Bool, documents: Int)]>([])
        let log = LogRecorder {
            guard let database = databaseBox.value else { return }
            let reading = (database.isInTransactionOnCurrentThread, database.snapshot.documentCount(in: "players"))
            seen.mutate { $0.append(reading) }
        }
        let database = Database(logger: log.logger)
        databaseBox.mutate { $0 = database }
        database.apply([
            .added(lovelace, ["score": 25]), .removed(DocumentKey(collectionName: "players", documentID: "ghost"))
        ])
        database.apply(.changed(nobody, ["score": 1], cleared: []))
        XCTAssertEqual(seen.value.map(\.inTransaction), [false, false], "logged outside the transaction")
        XCTAssertEqual(seen.value.map(\.documents), [1, 2], "each handler call saw its batch committed")
    }

    func testUpdatesForUnknownDocumentsInABatchLoseNothingElse() {
        let database = Database()
        let recorder = ChangesRecorder(database)
        database.apply([
            .added(lovelace, ["score": 25]),
            .removed(DocumentKey(collectionName: "players", documentID: "ghost")),
            .changed(lovelace, [:], cleared: ["missing field"]),
            .changed(lovelace, ["score": 30], cleared: [])
        ])
        XCTAssertEqual(database.document(lovelace)?["score"], 30)
        XCTAssertEqual(recorder.changes.count, 1)
        XCTAssertEqual(recorder.changes.first?.affectedDocumentKeys, [lovelace])
    }
}
