import EJSON
import Foundation

/// Where and how a ``DDPClient`` keeps its cache and its unanswered calls between launches (opt-in).
///
/// For example:
/// ```swift
/// var configuration = DDPClient.Configuration()
/// configuration.persistence = .sqlite(at: try Persistence.defaultFileURL(named: "todos.sqlite"))
/// let client = DDPClient(url: serverURL, configuration: configuration)
/// // The cache and the calls of the last run are back: read them before connecting.
/// client.connect()
/// ```
///
/// With persistence on:
/// - **The cache is restored** when the client is created, before it connects: the app's first read and first live
///   query see the last known data (and the effects of the stubs of unanswered calls).
/// - **Every committed change is written behind**, on the store's own queue, one SQLite transaction per batch of
///   changes (coalesced under load); readers, writers and notifications never wait for the disk.
/// - **Calls are durable before they are sent**: a call's frame goes out once its record (id, name, parameters,
///   `randomSeed`, options) is on disk, in the same transaction as its stub's effects. After a restart the calls are
///   sent again with the same ids and seeds; their outcomes reach ``DDPClient/restoredCalls``.
/// - **The first connection reconciles**: restored data is treated like data held across a reconnect (see
///   ``reconciliationDelay``); unchanged documents post no change notification.
///
/// Calls of ``memoryOnlyMethods`` (logins and other calls that carry secrets) are never written to disk.
public struct Persistence: Sendable {
    /// Opens the store; called once, when the client is created.
    let openStore: @Sendable () throws -> any ClientStore

    /// After a restart, how long the first connection waits for the app to subscribe again to a subscription that
    /// was active when the app stopped. Default 2 s.
    ///
    /// The rule: on the first connection after a restore, incoming data is held (as after a reconnect) until every
    /// subscription the app has made is ready *and* every restored subscription has either been made again and is
    /// ready, or was not made again within this delay of the connection. Then the held data replaces the restored
    /// cache in one transaction: documents the server no longer publishes for these subscriptions go away (those of
    /// subscriptions that were not made again too), documents written by unanswered calls' stubs stay until their
    /// calls' `updated`, and unchanged documents produce no notification.
    public var reconciliationDelay: Duration = .seconds(2)

    /// Whether ``DDPClient/logout()`` keeps the persisted cache (the calls are cleared either way). Default `false`:
    /// logging out removes what the last user saw from the disk.
    public var keepsCacheOnLogout = false

    /// Methods whose calls stay in memory only (never written to the store): those that carry passwords or tokens.
    public var memoryOnlyMethods: Set<String> = [
        "login", "logout", "logoutOtherClients", "getNewToken", "removeOtherTokens", "createUser", "changePassword",
        "forgotPassword", "resetPassword", "verifyEmail"
    ]

    /// Persistence through any ``ClientStore`` (a custom store; tests use an in-memory one).
    public static func store(_ store: any ClientStore) -> Persistence {
        Persistence(openStore: { store })
    }

    /// Persistence in a SQLite file (WAL mode, created with permissions 0600; its directory is created 0700 if it
    /// does not exist). A corrupt file, or one written by a newer version of this library, is moved aside (see
    /// ``PersistenceError``) and the client starts with an empty cache.
    public static func sqlite(at fileURL: URL) -> Persistence {
        Persistence(openStore: { try SQLiteStore(fileURL: fileURL) })
    }

    /// A file in the application-support directory (`~/Library/Application Support/MeteorDDP/` on Apple
    /// platforms, `$XDG_DATA_HOME` or `~/.local/share/MeteorDDP/` on Linux), its directory created 0700.
    public static func defaultFileURL(named name: String = "MeteorDDP.sqlite") throws -> URL {
        let base = try FileManager.default.url(
            for: .applicationSupportDirectory, in: .userDomainMask, appropriateFor: nil, create: true)
        let directory = base.appendingPathComponent("MeteorDDP", isDirectory: true)
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return directory.appendingPathComponent(name)
    }
}

/// What a ``Persistence`` keeps: the cache, the server's versions of stub-written documents, unanswered calls and
/// active subscriptions. ``SQLiteStore`` implements it; implement it for another storage (for example in tests).
///
/// ## Implementation requirements
///
/// What a ``DDPClient`` relies on from its store:
/// - **Which thread, and when.** ``load()`` is called once, first, on the thread that creates the client (inside
///   its initializer). After it, ``write(_:)`` and ``clear(keepingDocuments:keepingCalls:)`` are called on the
///   client's write-behind queue: a serial dispatch queue of its own (quality of service `.utility`), never the
///   client queue or the callback queue, and never under a lock of the client. One client never calls its store
///   concurrently, but its calls come from more than one thread: the store must be `Sendable`. A store instance
///   given to two clients (the same ``Persistence/store(_:)``) may get their calls concurrently.
/// - **Order.** Batches and clears come in the order of what they hold, one after the other: a clear comes after
///   the batch holding everything handed to the store before it. ``load()`` must list ``StoredState/methods`` in the
///   order the calls came in ``StoreBatch/methodsAdded`` (across batches): the client sends them again in that
///   order. Within one batch, apply ``StoreBatch/methodsAdded``, then ``StoreBatch/methodResults``, then
///   ``StoreBatch/methodsRemoved`` (as ``SQLiteStore`` does): a batch holds everything handed over since the one
///   before it, so a call's result and its removal may come in the same batch.
/// - **Durability.** ``write(_:)`` and ``clear(keepingDocuments:keepingCalls:)`` return once their change is on disk
///   (it survives the process being killed), all of it or none. When a write returns, the client sends the calls it
///   added (a stored call's frame waits for its batch) and tells ``MethodOptions/onDurable`` `true`; when a clear
///   returns, ``DDPClient/logout()`` returns. After a restart, ``load()`` returns the state the last of them to
///   return left.
/// - **Blocking.** The calls may block (the disk). ``load()`` holds up the client's initializer; the others hold up
///   only what waits for the disk: the calls waiting for their batch, ``DDPClient/flushStore()`` and
///   ``DDPClient/logout()``. While a write runs, what the client hands over waits in memory for the next batch (a
///   document changed many times is written once, at its newest version).
/// - **Errors.** An error thrown by ``write(_:)`` or ``clear(keepingDocuments:keepingCalls:)`` stops persistence for
///   the client's lifetime: the store is not called again; the client goes on in memory (the calls waiting for the
///   disk go out, ``MethodOptions/onDurable`` gets `false`) and reports the error once on ``DDPClient/errors``, code
///   ``DDPError/Code/persistenceFailed`` (a ``PersistenceError`` as thrown, any other error as
///   ``PersistenceError/Kind/writeFailed``). An error thrown by ``load()`` is reported in ``DDPClient/restoreReport``
///   as ``PersistenceError/Kind/readFailed``; the client then calls `clear(keepingDocuments: false, keepingCalls: [])`
///   (its error ignored), starts with an empty cache, and goes on writing to the store.
public protocol ClientStore: Sendable {
    /// Everything stored, read once when the client is created.
    func load() throws -> StoredState
    /// Applies one batch atomically (one transaction): a crash leaves the store as before or after it.
    func write(_ batch: StoreBatch) throws
    /// Clears the store when the user logs out: removes the calls but those in `keepingCalls`, the subscriptions, and
    /// the documents unless `keepingDocuments`. The calls kept are the ones made after the logout (they wait for it and
    /// are not the last user's): their stubs' documents (``StoredMethod/stubWrote``) and the server's versions of them
    /// stay with them; every other server's version goes.
    func clear(keepingDocuments: Bool, keepingCalls: Set<String>) throws
    /// Deletes everything the store holds (``DDPClient/clearPersistence()``), on the write-behind queue. The default
    /// clears with nothing kept; a store whose deleted data stays readable in its files (a log, free pages) should
    /// scrub it, as ``SQLiteStore/erase()`` does.
    func erase() throws
}

extension ClientStore {
    public func erase() throws {
        try clear(keepingDocuments: false, keepingCalls: [])
    }
}

/// The state a ``ClientStore`` holds.
public struct StoredState: Sendable, Equatable {
    /// The cache's documents.
    public var documents: [StoredDocument]
    /// The server's versions of the documents written by the stubs of unanswered calls.
    public var serverDocuments: [StoredServerDocument]
    /// Unanswered calls, in call order.
    public var methods: [StoredMethod]
    /// Active subscriptions, in subscription order.
    public var subscriptions: [StoredSubscription]

    public init(
        documents: [StoredDocument] = [], serverDocuments: [StoredServerDocument] = [], methods: [StoredMethod] = [],
        subscriptions: [StoredSubscription] = []
    ) {
        self.documents = documents
        self.serverDocuments = serverDocuments
        self.methods = methods
        self.subscriptions = subscriptions
    }
}

/// A document of the cache.
public struct StoredDocument: Sendable, Equatable {
    public var key: DocumentKey
    /// The document (its id is `key.documentID`).
    public var document: Document
    /// Its fields (decoded on each call).
    public var fields: EJSONObject { document.fields }

    public init(key: DocumentKey, document: Document) {
        self.key = key
        self.document = document
    }

    public init(key: DocumentKey, fields: EJSONObject) {
        self.init(key: key, document: Document(id: key.documentID, fields: fields))
    }
}

/// The server's version of a document written by the stubs of unanswered calls.
public struct StoredServerDocument: Sendable, Equatable {
    public var key: DocumentKey
    /// The server's fields (`nil`: the server has no such document, or its version is not known yet).
    public var fields: EJSONObject?
    /// The ids of the calls whose stubs wrote it.
    public var writtenByMethods: [String]

    public init(key: DocumentKey, fields: EJSONObject?, writtenByMethods: [String]) {
        self.key = key
        self.fields = fields
        self.writtenByMethods = writtenByMethods
    }
}

/// An unanswered call, as it goes on the wire again after a restart.
public struct StoredMethod: Sendable, Equatable {
    public var id: String
    public var name: String
    public var params: [EJSONValue]
    public var randomSeed: String?
    public var wait: Bool
    public var noRetry: Bool
    /// The ids of the documents its stub wrote (for reporting).
    public var stubWrote: [DocumentKey]
    /// The server's answer when it came before the call's data was visible (the call is not sent again).
    public var result: StoredMethodResult?
    /// What its stub did to each document it wrote, as the stub left it (`nil`: not recorded, in a store written
    /// by an earlier version). A restored call is ``RestoredCallOutcome/Result/alreadyApplied(_:)`` when the server
    /// shows these effects.
    public var stubEffects: [StoredStubEffect]?

    public init(
        id: String, name: String, params: [EJSONValue], randomSeed: String?, wait: Bool, noRetry: Bool,
        stubWrote: [DocumentKey] = [],
        result: StoredMethodResult? = nil, stubEffects: [StoredStubEffect]? = nil
    ) {
        self.id = id
        self.name = name
        self.params = params
        self.randomSeed = randomSeed
        self.wait = wait
        self.noRetry = noRetry
        self.stubWrote = stubWrote
        self.result = result
        self.stubEffects = stubEffects
    }
}

/// What a stub did to one document: the fields it set (to the values it set them to) and the fields it removed, or
/// that it left the document absent.
public struct StoredStubEffect: Sendable, Equatable {
    public var key: DocumentKey
    /// The fields the stub set, with their values (`nil`: the stub left no such document).
    public var set: EJSONObject?
    /// The fields the stub removed.
    public var unset: [String]

    public init(key: DocumentKey, set: EJSONObject?, unset: [String] = []) {
        self.key = key
        self.set = set
        self.unset = unset
    }

    /// The effect of a stub that turned `before` into `after` (fields as the cache holds them, without `_id`).
    init(key: DocumentKey, before: EJSONObject?, after: EJSONObject?) {
        self.key = key
        guard let after else {
            set = nil
            unset = []
            return
        }
        var set: EJSONObject = [:]
        for (name, value) in after
        where !(before?[name].map { EJSON.equals($0, value, keyOrderSensitive: true) } ?? false) {
            set[name] = value
        }
        self.set = set
        unset = before.map { $0.keys.filter { after[$0] == nil } } ?? []
    }
}

/// A server's answer to a stored call.
public enum StoredMethodResult: Sendable, Equatable {
    case value(EJSONValue?)
    case error(MeteorError)
}

/// A subscription active when the state was written.
public struct StoredSubscription: Sendable, Equatable, Hashable {
    public var name: String
    public var params: [EJSONValue]

    public init(name: String, params: [EJSONValue]) {
        self.name = name
        self.params = params
    }
}

/// One atomic write of a ``ClientStore``.
public struct StoreBatch: Sendable {
    /// Documents whose newest version is written (`nil`: removed), at most one entry per key.
    public var documents: [(key: DocumentKey, document: Document?)] = []
    /// Server versions written (`nil`: no longer kept), at most one entry per key.
    public var serverDocuments: [(key: DocumentKey, document: StoredServerDocument?)] = []
    /// Calls added, in call order.
    public var methodsAdded: [StoredMethod] = []
    /// Results of calls received before their data was visible.
    public var methodResults: [(id: String, result: StoredMethodResult)] = []
    /// Calls completed (removed).
    public var methodsRemoved: [String] = []
    /// The active subscriptions, when they changed.
    public var subscriptions: [StoredSubscription]?

    public init() {}

    public var isEmpty: Bool {
        documents.isEmpty && serverDocuments.isEmpty && methodsAdded.isEmpty && methodResults.isEmpty
            && methodsRemoved.isEmpty
            && subscriptions == nil
    }
}
