import EJSON
import Logging
import XCTest

@testable import MeteorDDP

/// Updates that do not fit the cache are applied with Meteor's tolerance, each anomaly logged, nothing else lost.
final class DatabaseBadInputTests: XCTestCase {
    /// Collects the messages logged through it.
    private final class LogRecorder: @unchecked Sendable {
        // @unchecked because `messages` is protected by `lock`.
        private let lock = NSLock()
        private var recorded: [String] = []
        func append(_ message: String) { lock.withLock { recorded.append(message) } }
        var messages: [String] { lock.withLock { recorded } }
    }

    private struct RecordingLogHandler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            recorder.append("\(event.message) \(event.metadata?["key"].map { "\($0)" } ?? "")")
        }
    }

    private let lovelace = DocumentKey(collectionName: "players", documentID: "lovelace")
    private let nobody = DocumentKey(collectionName: "players", documentID: "nobody")

    func testEveryToleratedAnomalyIsLoggedWithTheDocumentKey() {
        let log = LogRecorder()
        let database = Database(logger: Logger(label: "test", factory: { _ in RecordingLogHandler(recorder: log) }))
        database.apply(.added(lovelace, ["score": 25]))
        XCTAssertEqual(log.messages, [], "a regular add logs nothing")
        database.apply(.added(lovelace, ["score": 26]))
        database.apply(.changed(nobody, ["score": 1], cleared: []))
        database.apply(.removed(DocumentKey(collectionName: "players", documentID: "ghost")))
        XCTAssertEqual(log.messages.count, 3)
        XCTAssertTrue(log.messages[0].contains("players/lovelace"))
        XCTAssertTrue(log.messages[1].contains("players/nobody"))
        XCTAssertTrue(log.messages[2].contains("players/ghost"))
    }

    func testUpdatesForUnknownDocumentsInABatchLoseNothingElse() {
        let database = Database()
        let recorder = ChangesRecorder(database)
        database.apply([
            .added(lovelace, ["score": 25]),
            .removed(DocumentKey(collectionName: "players", documentID: "ghost")),
            .changed(lovelace, [:], cleared: ["missing field"]),
            .changed(lovelace, ["score": 30], cleared: []),
        ])
        XCTAssertEqual(database.document(lovelace)?["score"], 30)
        XCTAssertEqual(recorder.changes.count, 1)
        XCTAssertEqual(recorder.changes.first?.affectedDocumentKeys, [lovelace])
    }
}
