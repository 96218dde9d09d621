import EJSON
import Foundation
import XCTest

@testable import MeteorDDP

/// The SQLite store: what it writes comes back, its file is private, and an unusable file is moved aside with a
/// typed error instead of crashing or being overwritten.
final class SQLiteStoreTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("sqlite-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    private var file: URL { directory.appendingPathComponent("nested/cache.sqlite") }

    private let ada = DocumentKey(collectionName: "players", documentID: "ada")
    private let gauss = DocumentKey(collectionName: "players", documentID: "gauss")

    func testWhatIsWrittenIsLoadedBackInOrder() throws {
        let store = try SQLiteStore(fileURL: file)
        var batch = StoreBatch()
        batch.documents = [
            (
                ada,
                Document(
                    id: "ada",
                    fields: ["name": "Ada", "born": .date(Date(timeIntervalSince1970: 1)), "tags": ["x", 1.5]])
            ), (gauss, Document(id: "gauss", fields: ["name": "Gauss"]))
        ]
        batch.serverDocuments = [(gauss, StoredServerDocument(key: gauss, fields: nil, writtenByMethods: ["2", "10"]))]
        batch.methodsAdded = [
            StoredMethod(
                id: "2", name: "add", params: ["gauss", ["n": 1]], randomSeed: "seed", wait: false, noRetry: true,
                stubWrote: [gauss]),
            StoredMethod(id: "10", name: "touch", params: [], randomSeed: nil, wait: true, noRetry: false)
        ]
        batch.subscriptions = [StoredSubscription(name: "players", params: [5])]
        try store.write(batch)
        var second = StoreBatch()
        second.documents = [(ada, nil)]
        second.methodResults = [("10", .error(MeteorError(error: .number(409), reason: "dup")))]
        try store.write(second)

        let loaded = try SQLiteStore(fileURL: file).load()
        XCTAssertEqual(loaded.documents, [StoredDocument(key: gauss, fields: ["name": "Gauss"])])
        XCTAssertEqual(
            loaded.serverDocuments, [StoredServerDocument(key: gauss, fields: nil, writtenByMethods: ["2", "10"])])
        XCTAssertEqual(loaded.methods.map(\.id), ["2", "10"], "call order")
        XCTAssertEqual(
            loaded.methods[0],
            StoredMethod(
                id: "2", name: "add", params: ["gauss", ["n": 1]], randomSeed: "seed", wait: false, noRetry: true,
                stubWrote: [gauss]))
        XCTAssertEqual(loaded.methods[1].result, .error(MeteorError(error: .number(409), reason: "dup")))
        XCTAssertEqual(loaded.subscriptions, [StoredSubscription(name: "players", params: [5])])
    }

    func testARestoredCacheListsDocumentsInTheirArrivalOrder() throws {
        let ids = (0..<30).map { "p\(($0 * 37) % 101)" }
        let database = Database()
        for id in ids { database.apply(.added(DocumentKey(collectionName: "players", documentID: id), ["n": 1])) }
        var batch = StoreBatch()
        // Written in the table's order (by hash), as the write-behind hands them over in any order.
        batch.documents = database.snapshot.allDocuments(in: "players").map {
            (DocumentKey(collectionName: "players", documentID: $0.id), $0)
        }
        try SQLiteStore(fileURL: file).write(batch)

        let restored = Database()
        restored.install(try SQLiteStore(fileURL: file).load().documents.map { ($0.key, $0.document) })
        XCTAssertEqual(try restored.collection("players").find().map(\.id), ids)
    }

    func testACallsStubEffectsComeBackAsWritten() throws {
        let effects = [
            StoredStubEffect(key: ada, set: ["n": 1, "tags": ["x"]], unset: ["old"]),
            StoredStubEffect(key: gauss, set: nil)
        ]
        var batch = StoreBatch()
        batch.methodsAdded = [
            StoredMethod(
                id: "1", name: "m", params: [], randomSeed: nil, wait: false, noRetry: false, stubWrote: [ada, gauss],
                stubEffects: effects),
            StoredMethod(id: "2", name: "m", params: [], randomSeed: nil, wait: false, noRetry: false)
        ]
        try SQLiteStore(fileURL: file).write(batch)
        let loaded = try SQLiteStore(fileURL: file).load().methods
        XCTAssertEqual(loaded.map(\.stubEffects), [effects, nil])
    }

    func testADocumentKeyedByObjectIDComesBackKeyedByIt() throws {
        let id = ObjectID("5f1d7a3c9e1b2a0012345678")!
        let key = DocumentKey(collectionName: "things", documentID: MongoID.documentID(id.ejsonValue))
        var batch = StoreBatch()
        batch.documents = [(key, Document(id: key.documentID, fields: ["ref": id.ejsonValue]))]
        try SQLiteStore(fileURL: file).write(batch)
        let restored = Database()
        restored.install(try SQLiteStore(fileURL: file).load().documents.map { ($0.key, $0.document) })
        let document = try XCTUnwrap(restored.collection("things").findOne(["_id": id.ejsonValue]))
        XCTAssertEqual(document.idValue, id.ejsonValue)
        XCTAssertEqual(document["ref"], id.ejsonValue)
    }

    func testTheFileAndItsDirectoryArePrivate() throws {
        let store = try SQLiteStore(fileURL: file)
        var batch = StoreBatch()
        batch.documents = [(ada, Document(id: "ada", fields: ["name": "Ada"]))]
        try store.write(batch)
        for path in [file.path, file.path + "-wal"] {
            let permissions = try XCTUnwrap(
                try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)
            XCTAssertEqual(permissions.intValue & 0o777, 0o600, path)
        }
        let directoryPermissions = try XCTUnwrap(
            try FileManager.default.attributesOfItem(atPath: file.deletingLastPathComponent().path)[.posixPermissions]
                as? NSNumber)
        XCTAssertEqual(directoryPermissions.intValue & 0o777, 0o700)
    }

    func testAFileOthersCouldReadIsMadePrivateAgain() throws {
        _ = try SQLiteStore(fileURL: file)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file.path)
        _ = try SQLiteStore(fileURL: file)
        let permissions = try XCTUnwrap(
            try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? NSNumber)
        XCTAssertEqual(permissions.intValue & 0o777, 0o600)
    }

    func testACorruptFileIsMovedAsideAndReported() throws {
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(repeating: 0x5A, count: 8192).write(to: file)
        let store = try SQLiteStore(fileURL: file)
        let problem = try XCTUnwrap(store.openingProblem)
        XCTAssertEqual(problem.kind, .corruptFile)
        let movedTo = try XCTUnwrap(problem.movedTo)
        XCTAssertEqual(
            try Data(contentsOf: URL(fileURLWithPath: movedTo)), Data(repeating: 0x5A, count: 8192),
            "the bad file is kept, untouched")
        XCTAssertEqual(try store.load(), StoredState(), "a new, empty store")
        var batch = StoreBatch()
        batch.documents = [(ada, Document(id: "ada", fields: ["name": "Ada"]))]
        XCTAssertNoThrow(try store.write(batch))
    }

    func testAFileOfANewerSchemaIsMovedAsideAndReported() throws {
        _ = try SQLiteStore(fileURL: file)
        // A later version of the library added a migration this one does not know.
        try runSQLite3(on: file, "INSERT INTO grdb_migrations (identifier) VALUES ('v9-from-the-future')")

        let store = try SQLiteStore(fileURL: file)
        XCTAssertEqual(store.openingProblem?.kind, .newerSchema)
        XCTAssertNotNil(store.openingProblem?.movedTo)
        XCTAssertEqual(try store.load(), StoredState())
    }

    func testAPathThatCannotBeOpenedThrowsATypedError() throws {
        let blocker = directory.appendingPathComponent("not-a-directory")
        try Data("x".utf8).write(to: blocker)
        XCTAssertThrowsError(try SQLiteStore(fileURL: blocker.appendingPathComponent("cache.sqlite"))) { error in
            XCTAssertEqual((error as? PersistenceError)?.kind, .cannotOpen)
        }
    }

    func testClearingKeepsTheDocumentsOnlyWhenAsked() throws {
        let store = try SQLiteStore(fileURL: file)
        var batch = StoreBatch()
        batch.documents = [(ada, Document(id: "ada", fields: ["name": "Ada"]))]
        batch.methodsAdded = [
            StoredMethod(id: "1", name: "m", params: [], randomSeed: nil, wait: false, noRetry: false)
        ]
        batch.subscriptions = [StoredSubscription(name: "players", params: [])]
        try store.write(batch)
        try store.clear(keepingDocuments: true, keepingCalls: [])
        XCTAssertEqual(try store.load(), StoredState(documents: [StoredDocument(key: ada, fields: ["name": "Ada"])]))
        try store.clear(keepingDocuments: false, keepingCalls: [])
        XCTAssertEqual(try store.load(), StoredState())
    }

    func testClearingKeepsTheCallsAskedForWithTheirStubsDocumentsAndServerVersions() throws {
        let store = try SQLiteStore(fileURL: file)
        let todo = DocumentKey(collectionName: "todos", documentID: "t1")
        let kept = StoredMethod(
            id: "2", name: "addTodo", params: ["bread"], randomSeed: "s", wait: false, noRetry: false, stubWrote: [todo]
        )
        var batch = StoreBatch()
        batch.documents = [
            (ada, Document(id: "ada", fields: ["name": "Ada"])), (todo, Document(id: "t1", fields: ["title": "bread"]))
        ]
        batch.serverDocuments = [
            (ada, StoredServerDocument(key: ada, fields: ["name": "A"], writtenByMethods: ["1"])),
            (todo, StoredServerDocument(key: todo, fields: nil, writtenByMethods: ["2"]))
        ]
        batch.methodsAdded = [
            StoredMethod(
                id: "1", name: "m", params: [], randomSeed: nil, wait: false, noRetry: false, stubWrote: [ada]), kept
        ]
        batch.subscriptions = [StoredSubscription(name: "players", params: [])]
        try store.write(batch)
        try store.clear(keepingDocuments: false, keepingCalls: ["2"])
        XCTAssertEqual(
            try store.load(),
            StoredState(
                documents: [StoredDocument(key: todo, fields: ["title": "bread"])],
                serverDocuments: [StoredServerDocument(key: todo, fields: nil, writtenByMethods: ["2"])],
                methods: [kept]
            ))
    }
}
