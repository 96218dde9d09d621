import EJSON
import Foundation
import GRDB
import NIOConcurrencyHelpers

/// A ``ClientStore`` in one SQLite file, through GRDB: WAL mode, one transaction per batch, schema versions migrated
/// with a `DatabaseMigrator`.
///
/// Documents are stored as the cache keeps them (packed fields, about their JSON size): writing one is a copy, and
/// reading one back is a validation pass and a copy (a changed file gives a typed error,
/// never a bad read). A change of that format comes with a migration. Parameters and results of calls are EJSON
/// text. Rows are keyed by collection and id. Opening moves an unusable file aside (with its `-wal` and `-shm` files)
/// to `<name>.unusable-<timestamp>` and starts a new one; see ``PersistenceError``.
///
/// ## Erasure
/// A logout's ``clear(keepingDocuments:keepingCalls:)`` and ``erase()`` leave none of the erased rows' bytes in the
/// store's files: the connection runs with `PRAGMA secure_delete` (SQLite overwrites deleted content with zeros), the
/// file is rebuilt (`VACUUM`, unless the documents are kept), the write-ahead log is checkpointed and truncated to
/// zero bytes (`wal_checkpoint(TRUNCATE)`), temporary tables live in memory, and files moved aside earlier
/// (`.unusable-…`) are deleted. While another connection reads the file (an app extension, a second store on the
/// same path) the checkpoint cannot finish: ``erase()`` then throws, and a logout's clear tries again after the next
/// write. What this cannot promise: a file system or SSD that keeps old blocks (copy-on-write
/// snapshots, wear levelling, backups, an OS swap file) may still hold them on the device; only full-disk encryption
/// (iOS Data Protection, FileVault, LUKS) covers that.
public final class SQLiteStore: ClientStore, @unchecked Sendable {
    // @unchecked because `database` is a GRDB `DatabaseQueue` (Sendable, serialising every access itself),
    // `scrubPending` is behind its lock, and the rest is immutable.

    /// The file.
    public let fileURL: URL
    private let database: DatabaseQueue
    /// Whether a logout's scrub could not finish (a busy checkpoint) and is to be tried again after the next write.
    private let scrubPending = NIOLockedValueBox(false)
    /// The problem met while opening (the unusable file moved aside), reported with what `load()` returns.
    let openingProblem: PersistenceError?

    /// The newest schema version this library writes.
    static let migrations = ["v1"]

    /// Opens (or creates) the store at `fileURL`.
    /// - Throws: ``PersistenceError`` of kind ``PersistenceError/Kind/cannotOpen`` when the file cannot be opened at
    ///   all.
    public init(fileURL: URL) throws {
        self.fileURL = fileURL
        let path = fileURL.path
        do {
            (database, openingProblem) = try Self.open(path)
        } catch let error as PersistenceError {
            throw error
        } catch {
            throw PersistenceError(.cannotOpen, path: path, reason: "\(error)")
        }
    }

    private static func open(_ path: String) throws -> (DatabaseQueue, PersistenceError?) {
        try prepareFile(path)
        do {
            return (try openAndMigrate(path), nil)
        } catch let unusable as Unusable {
            let movedTo = try moveAside(path)
            let problem = PersistenceError(unusable.kind, path: path, movedTo: movedTo, reason: unusable.reason)
            try prepareFile(path)
            return (try openAndMigrate(path), problem)
        } catch let error as DatabaseError where [.SQLITE_NOTADB, .SQLITE_CORRUPT].contains(error.resultCode) {
            let movedTo = try moveAside(path)
            let problem = PersistenceError(.corruptFile, path: path, movedTo: movedTo, reason: "\(error)")
            try prepareFile(path)
            return (try openAndMigrate(path), problem)
        }
    }

    private struct Unusable: Error {
        let kind: PersistenceError.Kind
        let reason: String
    }

    /// Creates the directory (0700) and an empty file (0600) if missing; SQLite gives its `-wal` and `-shm` files
    /// the main file's permissions.
    private static func prepareFile(_ path: String) throws {
        let fileManager = FileManager.default
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty, !fileManager.fileExists(atPath: directory) {
            try fileManager.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        if !fileManager.fileExists(atPath: path) {
            guard fileManager.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw PersistenceError(.cannotOpen, path: path, reason: "cannot create the file")
            }
        }
        // A file others may read (made by hand, copied, restored from a backup) is made private again, with its
        // companions: it holds what the user saw and did.
        for file in [path, path + "-wal", path + "-shm"] {
            guard let permissions = (try? fileManager.attributesOfItem(atPath: file))?[.posixPermissions] as? NSNumber,
                permissions.intValue & 0o077 != 0
            else { continue }
            try fileManager.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        }
    }

    private static func openAndMigrate(_ path: String) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.journalMode = .wal
        configuration.busyMode = .timeout(5)
        configuration.label = "MeteorDDP.SQLiteStore"
        configuration.prepareDatabase { db in
            // Deleted rows are overwritten with zeros, and temporary tables (a logout's) never touch the disk.
            try db.execute(sql: "PRAGMA secure_delete = ON; PRAGMA temp_store = MEMORY")
        }
        let database = try DatabaseQueue(path: path, configuration: configuration)
        let migrator = makeMigrator()
        try database.writeWithoutTransaction { db in
            // A kill loses nothing committed (the WAL is in the OS's cache); a power cut may lose the last commits.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // Forces SQLite to read the header: a file that is not a database fails here.
            _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master")
            if try migrator.hasBeenSuperseded(db) {
                let applied = try migrator.appliedIdentifiers(db)
                throw Unusable(
                    kind: .newerSchema,
                    reason: "schema versions \(applied.sorted()) include some this library does not know")
            }
        }
        try migrator.migrate(database)
        return database
    }

    private static func makeMigrator() -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE document (collection TEXT NOT NULL, id TEXT NOT NULL, fields BLOB NOT NULL,
                        PRIMARY KEY (collection, id)) WITHOUT ROWID;
                    CREATE TABLE serverDocument (collection TEXT NOT NULL, id TEXT NOT NULL, fields TEXT,
                        methods TEXT NOT NULL, PRIMARY KEY (collection, id)) WITHOUT ROWID;
                    CREATE TABLE method (position INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,
                        name TEXT NOT NULL, params TEXT NOT NULL, randomSeed TEXT, wait INTEGER NOT NULL,
                        noRetry INTEGER NOT NULL, stubWrote TEXT NOT NULL, result TEXT);
                    CREATE TABLE subscription (position INTEGER PRIMARY KEY, name TEXT NOT NULL, params TEXT NOT NULL);
                    """)
        }
        // A document's place in the arrival order (`Document.arrival`), so a restored cache lists unsorted results
        // as they were listed before. Documents stored before this version (0) come first, by id.
        migrator.registerMigration("v2") { db in
            try db.execute(sql: "ALTER TABLE document ADD COLUMN arrival INTEGER NOT NULL DEFAULT 0")
        }
        // What each call's stub did to the documents it wrote (`StoredMethod.stubEffects`; NULL in rows from before).
        migrator.registerMigration("v3") { db in
            try db.execute(sql: "ALTER TABLE method ADD COLUMN stubEffects TEXT")
        }
        return migrator
    }

    /// Whether an error from SQLite says the file is damaged (found while reading, past the header).
    static func isCorruption(_ error: any Error) -> Bool {
        guard let error = error as? DatabaseError else { return false }
        return [.SQLITE_NOTADB, .SQLITE_CORRUPT].contains(error.resultCode)
    }

    /// A store in place of one whose file turned out damaged while reading: the file is moved aside and a new one
    /// created. Returns the new store and the problem to report.
    static func replacingDamagedFile(of store: SQLiteStore, _ error: any Error) throws -> (
        SQLiteStore, PersistenceError
    ) {
        let path = store.fileURL.path
        let movedTo = try moveAside(path)
        return (
            try SQLiteStore(fileURL: store.fileURL),
            PersistenceError(.corruptFile, path: path, movedTo: movedTo, reason: "\(error)")
        )
    }

    /// Moves the file and its `-wal`/`-shm` companions aside; returns the new path of the file.
    private static func moveAside(_ path: String) throws -> String {
        let stamp = Int(Date().timeIntervalSince1970 * 1000)
        let target = "\(path).unusable-\(stamp)"
        let fileManager = FileManager.default
        try fileManager.moveItem(atPath: path, toPath: target)
        for suffix in ["-wal", "-shm"] where fileManager.fileExists(atPath: path + suffix) {
            try? fileManager.moveItem(atPath: path + suffix, toPath: target + suffix)
        }
        return target
    }

    // MARK: - ClientStore

    public func load() throws -> StoredState {
        try database.read { db in
            var state = StoredState()
            let documents = try Row.fetchCursor(
                db, sql: "SELECT collection, id, fields FROM document ORDER BY arrival, collection, id")
            while let row = try documents.next() {
                let key = DocumentKey(
                    collectionName: try row.decode(atIndex: 0), documentID: try row.decode(atIndex: 1))
                let document = try row.withUnsafeData(atIndex: 2) { packed in
                    guard let packed else { throw BadRow(description: "a stored document without fields") }
                    return try packed.withUnsafeBytes { bytes in
                        do {
                            return try Document(id: key.documentID, validatingPackedFields: bytes)
                        } catch {
                            throw BadRow(description: "stored document \(key): \(error)")
                        }
                    }
                }
                state.documents.append(StoredDocument(key: key, document: document))
            }
            let servers = try Row.fetchCursor(db, sql: "SELECT collection, id, fields, methods FROM serverDocument")
            while let row = try servers.next() {
                let fields: String? = try row.decode(atIndex: 2)
                state.serverDocuments.append(
                    StoredServerDocument(
                        key: DocumentKey(
                            collectionName: try row.decode(atIndex: 0), documentID: try row.decode(atIndex: 1)),
                        fields: try fields.map(Self.object),
                        writtenByMethods: try Self.strings(try row.decode(atIndex: 3))
                    ))
            }
            let methods = try Row.fetchCursor(
                db,
                sql:
                    "SELECT id, name, params, randomSeed, wait, noRetry, stubWrote, result, stubEffects "
                    + "FROM method ORDER BY position"
            )
            while let row = try methods.next() {
                let result: String? = try row.decode(atIndex: 7)
                let effects: String? = try row.decode(atIndex: 8)
                state.methods.append(
                    StoredMethod(
                        id: try row.decode(atIndex: 0), name: try row.decode(atIndex: 1),
                        params: try Self.array(try row.decode(atIndex: 2)),
                        randomSeed: try row.decode(atIndex: 3), wait: try row.decode(atIndex: 4),
                        noRetry: try row.decode(atIndex: 5),
                        stubWrote: try Self.keys(try row.decode(atIndex: 6)), result: try result.map(Self.methodResult),
                        stubEffects: try effects.map(Self.stubEffects)
                    ))
            }
            let subscriptions = try Row.fetchCursor(db, sql: "SELECT name, params FROM subscription ORDER BY position")
            while let row = try subscriptions.next() {
                state.subscriptions.append(
                    StoredSubscription(
                        name: try row.decode(atIndex: 0), params: try Self.array(try row.decode(atIndex: 1))))
            }
            return state
        }
    }

    public func write(_ batch: StoreBatch) throws {
        defer {
            if scrubPending.withLockedValue({ $0 }), (try? scrub(rebuilding: true)) != nil {
                scrubPending.withLockedValue { $0 = false }
            }
        }
        try database.write { db in
            if !batch.documents.isEmpty {
                let upsert = try db.cachedStatement(
                    sql: "INSERT OR REPLACE INTO document (collection, id, fields, arrival) VALUES (?, ?, ?, ?)")
                let delete = try db.cachedStatement(sql: "DELETE FROM document WHERE collection = ? AND id = ?")
                for (key, document) in batch.documents {
                    if let document {
                        let packed = document.withBytes { Data($0) }
                        try upsert.execute(arguments: [
                            key.collectionName, key.documentID, packed, Int64(bitPattern: document.arrival)
                        ])
                    } else {
                        try delete.execute(arguments: [key.collectionName, key.documentID])
                    }
                }
            }
            for (key, document) in batch.serverDocuments {
                if let document {
                    try db.execute(
                        sql:
                            "INSERT OR REPLACE INTO serverDocument (collection, id, fields, methods) "
                            + "VALUES (?, ?, ?, ?)",
                        arguments: [
                            key.collectionName, key.documentID, document.fields.map { EJSON.stringify(.object($0)) },
                            EJSON.stringify(.array(document.writtenByMethods.map { .string($0) }))
                        ]
                    )
                } else {
                    try db.execute(
                        sql: "DELETE FROM serverDocument WHERE collection = ? AND id = ?",
                        arguments: [key.collectionName, key.documentID])
                }
            }
            for method in batch.methodsAdded {
                try db.execute(
                    sql:
                        "INSERT OR REPLACE INTO method (id, name, params, randomSeed, wait, noRetry, "
                        + "stubWrote, result, stubEffects) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    arguments: [
                        method.id, method.name, EJSON.stringify(.array(method.params)), method.randomSeed, method.wait,
                        method.noRetry,
                        Self.text(method.stubWrote), method.result.map(Self.text), method.stubEffects.map(Self.text)
                    ]
                )
            }
            for (id, result) in batch.methodResults {
                try db.execute(sql: "UPDATE method SET result = ? WHERE id = ?", arguments: [Self.text(result), id])
            }
            for id in batch.methodsRemoved {
                try db.execute(sql: "DELETE FROM method WHERE id = ?", arguments: [id])
            }
            if let subscriptions = batch.subscriptions {
                try db.execute(sql: "DELETE FROM subscription")
                for (position, subscription) in subscriptions.enumerated() {
                    try db.execute(
                        sql: "INSERT INTO subscription (position, name, params) VALUES (?, ?, ?)",
                        arguments: [position, subscription.name, EJSON.stringify(.array(subscription.params))]
                    )
                }
            }
        }
    }

    public func clear(keepingDocuments: Bool, keepingCalls: Set<String>) throws {
        try database.write { db in
            // The documents the kept calls' stubs wrote, in a temporary table for the deletions below.
            try db.execute(
                sql:
                    "CREATE TEMP TABLE IF NOT EXISTS kept (collection TEXT NOT NULL, id TEXT NOT NULL); "
                    + "DELETE FROM kept"
            )
            let methods = try Row.fetchAll(db, sql: "SELECT id, stubWrote FROM method")
            for row in methods {
                let id: String = try row.decode(atIndex: 0)
                guard keepingCalls.contains(id) else {
                    try db.execute(sql: "DELETE FROM method WHERE id = ?", arguments: [id])
                    continue
                }
                for key in try Self.keys(try row.decode(atIndex: 1)) {
                    try db.execute(
                        sql: "INSERT INTO kept (collection, id) VALUES (?, ?)",
                        arguments: [key.collectionName, key.documentID])
                }
            }
            let unkept = "(collection, id) NOT IN (SELECT collection, id FROM kept)"
            if !keepingDocuments { try db.execute(sql: "DELETE FROM document WHERE \(unkept)") }
            try db.execute(sql: "DELETE FROM serverDocument WHERE \(unkept); DELETE FROM subscription; DROP TABLE kept")
        }
        // The deletions are committed: a scrub that cannot finish now (another connection reading the file: an app
        // extension, a second store on the path) must not stop persistence; it is tried again after the next write.
        if (try? scrub(rebuilding: !keepingDocuments)) == nil { scrubPending.withLockedValue { $0 = true } }
    }

    /// Deletes everything the store holds (``DDPClient/clearPersistence()``), leaving none of its bytes in the
    /// store's files (see "Erasure" above). The store stays usable.
    public func erase() throws {
        try database.write { db in
            try db.execute(
                sql: "DELETE FROM document; DELETE FROM serverDocument; DELETE FROM method; DELETE FROM subscription")
        }
        try scrub(rebuilding: true)
    }

    /// After a deletion: rebuilds the file (VACUUM: no page keeps an erased row's bytes in its free space) when
    /// asked, checkpoints the write-ahead log into the file and truncates it to zero bytes (its frames held the rows'
    /// earlier versions), and deletes the files moved aside earlier.
    private func scrub(rebuilding: Bool) throws {
        try database.writeWithoutTransaction { db in
            if rebuilding { try db.execute(sql: "VACUUM") }
            let checkpoint = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            let busy: Int = checkpoint?[0] ?? 1
            guard busy == 0 else {
                throw PersistenceError(
                    .writeFailed, path: fileURL.path, reason: "the write-ahead log could not be checkpointed (busy)")
            }
        }
        try Self.deleteMovedAsideFiles(of: fileURL.path)
    }

    /// Deletes the store at `fileURL` and its companions (`-wal`, `-shm`, files moved aside as `.unusable-…`) when no
    /// client has it open, for example at launch after a user's data must go. Files that do not exist are skipped.
    /// - Throws: what the file system throws for a file that exists and cannot be deleted.
    public static func deleteFiles(at fileURL: URL) throws {
        let path = fileURL.path
        let fileManager = FileManager.default
        for file in [path, path + "-wal", path + "-shm"] where fileManager.fileExists(atPath: file) {
            try fileManager.removeItem(atPath: file)
        }
        try deleteMovedAsideFiles(of: path)
    }

    private static func deleteMovedAsideFiles(of path: String) throws {
        let fileManager = FileManager.default
        let directory = (path as NSString).deletingLastPathComponent
        let prefix = (path as NSString).lastPathComponent + ".unusable-"
        let names = (try? fileManager.contentsOfDirectory(atPath: directory.isEmpty ? "." : directory)) ?? []
        for name in names where name.hasPrefix(prefix) {
            try fileManager.removeItem(atPath: (directory as NSString).appendingPathComponent(name))
        }
    }

    // MARK: - Encoding

    private struct BadRow: Error, CustomStringConvertible {
        let description: String
    }

    private static func object(_ text: String) throws -> EJSONObject {
        guard case .object(let object) = try EJSON.parse(text) else {
            throw BadRow(description: "a stored document is not an object")
        }
        return object
    }

    private static func array(_ text: String) throws -> [EJSONValue] {
        guard case .array(let array) = try EJSON.parse(text) else {
            throw BadRow(description: "stored parameters are not an array")
        }
        return array
    }

    private static func strings(_ text: String) throws -> [String] {
        try array(text).map { value in
            guard case .string(let string) = value else { throw BadRow(description: "a stored id is not a string") }
            return string
        }
    }

    private static func keys(_ text: String) throws -> [DocumentKey] {
        let parts = try strings(text)
        guard parts.count % 2 == 0 else { throw BadRow(description: "stored document keys are not pairs") }
        return stride(from: 0, to: parts.count, by: 2).map {
            DocumentKey(collectionName: parts[$0], documentID: parts[$0 + 1])
        }
    }

    private static func text(_ keys: [DocumentKey]) -> String {
        EJSON.stringify(.array(keys.flatMap { [EJSONValue.string($0.collectionName), .string($0.documentID)] }))
    }

    private static func text(_ result: StoredMethodResult) -> String {
        switch result {
        case .value(let value): return EJSON.stringify(["value": value.map { ["v": $0] } ?? [:]])
        case .error(let error):
            // Exactly as received (the wire form would fill in a composed message and a type).
            var object: EJSONObject = [:]
            switch error.error {
            case .number(let number): object["error"] = .number(number)
            case .string(let string): object["error"] = .string(string)
            }
            if let reason = error.reason { object["reason"] = .string(reason) }
            if let details = error.details { object["details"] = details }
            if let message = error.message { object["message"] = .string(message) }
            if let type = error.errorType { object["errorType"] = .string(type) }
            return EJSON.stringify(["error": .object(object)])
        }
    }

    private static func methodResult(_ text: String) throws -> StoredMethodResult {
        let object = try object(text)
        if let error = object["error"] { return .error(MeteorError(ejson: error)) }
        guard case .object(let wrapped)? = object["value"] else {
            throw BadRow(description: "a stored result has neither value nor error")
        }
        return .value(wrapped["v"])
    }

    /// Stub effects as `[[collection, id, set or null, [unset…]], …]`.
    private static func text(_ effects: [StoredStubEffect]) -> String {
        EJSON.stringify(
            .array(
                effects.map { effect in
                    [
                        .string(effect.key.collectionName), .string(effect.key.documentID),
                        effect.set.map { .object($0) } ?? .null,
                        .array(effect.unset.map { .string($0) })
                    ]
                }))
    }

    private static func stubEffects(_ text: String) throws -> [StoredStubEffect] {
        try array(text).map { entry in
            guard case .array(let parts) = entry, parts.count == 4, case .string(let collection) = parts[0],
                case .string(let id) = parts[1],
                case .array(let unset) = parts[3]
            else {
                throw BadRow(description: "a stored stub effect is not [collection, id, set, unset]")
            }
            let set: EJSONObject?
            switch parts[2] {
            case .null: set = nil
            case .object(let fields): set = fields
            default: throw BadRow(description: "a stored stub effect's fields are not an object")
            }
            return StoredStubEffect(
                key: DocumentKey(collectionName: collection, documentID: id), set: set,
                unset: unset.compactMap(\.stringValue))
        }
    }
}
