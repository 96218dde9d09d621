import EJSON
import Logging
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
