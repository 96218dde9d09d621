import EJSON

/// The server's version of every document a stub wrote, kept aside until every method that wrote it is done
/// (LC `_serverDocuments`, `_documentsWrittenByStub`, `_process_updated`).
///
/// While a document is here, server data for it updates this copy instead of the cache. When the last method that
/// wrote it gets its `updated`, the copy replaces whatever the stubs left in the cache (applying the server's
/// version, or reverting the stub). No I/O, confined to the client queue (one, in the session's state).
struct ServerDocumentBuffer {
    struct ServerDocument {
        /// The server's fields (`nil`: the server has no such document).
        var fields: EJSONObject?
        /// Methods whose stubs wrote the document and that have no `updated` yet.
        var writtenByMethods: Set<String>
        /// The flush waiters (``runWhenAllFlushed(sentMethods:sentGeneration:)``'s tokens) waiting for the document to
        /// be flushed to the cache.
        var flushWaiters: [Int] = []
    }

    /// A kept document as it stands, without its waiters (what a store keeps of it).
    struct Version: Equatable {
        /// The server's fields (`nil`: the server has no such document, or its version is not known yet).
        let fields: EJSONObject?
        /// The methods whose stubs wrote it, in call order.
        let writtenByMethods: [String]
    }

    /// A replacement to apply to the cache: the document becomes `fields` (`nil`: removed).
    struct Replacement: Equatable {
        let key: DocumentKey
        let fields: EJSONObject?
    }

    // MARK: - Mutable State (confined to the client queue)

    /// Confined to the client queue.
    private(set) var documents: [DocumentKey: ServerDocument] = [:]
    /// Documents written by each method's stub, in first-write order. Confined to the client queue.
    private(set) var documentsWrittenByMethod: [String: [DocumentKey]] = [:]
    /// With persistence on: the documents changed since ``takeChanges()``. Confined to the client queue.
    private var changedKeys: Set<DocumentKey>?
    /// The flush waiters registered last, while they still wait, with the sent calls' generation and the stub writes'
    /// count at the time (see ``runWhenAllFlushed(sentMethods:sentGeneration:)``). Confined to the client queue.
    private var latestWaiters: (token: Int, sentGeneration: Int, stubWrites: Int)?
    /// How many documents each waiting flush waiter still waits for, by token. Confined to the client queue.
    private var waiting: [Int: Int] = [:]
    /// The next flush waiter's token. Confined to the client queue.
    private var nextWaiter = 0
    /// Bumped at every stub write: a document may have joined those of the sent calls. Confined to the client queue.
    private var stubWrites = 0

    /// Starts noting changes for ``takeChanges()`` (persistence on).
    mutating func trackChanges() {
        if changedKeys == nil { changedKeys = [] }
    }

    /// The documents changed since the last call, each with its state now (`nil`: no longer kept).
    mutating func takeChanges() -> [(DocumentKey, Version?)] {
        guard let keys = changedKeys, !keys.isEmpty else { return [] }
        changedKeys = []
        return keys.map { key in
            (
                key,
                documents[key].map {
                    Version(
                        fields: $0.fields, writtenByMethods: $0.writtenByMethods.sorted(by: MethodCoordinator.idOrder))
                }
            )
        }
    }

    private mutating func noteChange(_ key: DocumentKey) {
        changedKeys?.insert(key)
    }

    /// Puts back what a store kept (at launch, before anything else): the kept documents, and the documents each
    /// restored call's stub wrote, in call order.
    mutating func restore(
        _ kept: [(DocumentKey, Version)], stubWrites calls: [(methodID: String, wrote: [DocumentKey])]
    ) {
        stubWrites &+= 1
        let restoredIDs = Set(calls.map(\.methodID))
        for (key, version) in kept {
            // Calls that were never stored (memory-only ones, those a logout cleared) will never have an `updated`.
            let writers = Set(version.writtenByMethods).intersection(restoredIDs)
            documents[key] = ServerDocument(fields: version.fields, writtenByMethods: writers)
            if writers.count != version.writtenByMethods.count { noteChange(key) }
        }
        for call in calls {
            let keys = call.wrote.filter { documents[$0]?.writtenByMethods.contains(call.methodID) == true }
            if !keys.isEmpty { documentsWrittenByMethod[call.methodID] = keys }
        }
        // A writer that does not list the document would never release it (and ``runWhenAllFlushed`` finds a sent
        // method's documents through its list): such writers are dropped, and a document no writer claims with them.
        for (key, document) in documents {
            let claiming = document.writtenByMethods.filter { documentsWrittenByMethod[$0]?.contains(key) == true }
            if !claiming.isEmpty, claiming.count == document.writtenByMethods.count { continue }
            if claiming.isEmpty {
                documents.removeValue(forKey: key)
            } else {
                documents[key]!.writtenByMethods = claiming
            }
            noteChange(key)
        }
    }

    /// The documents tracked now.
    var keys: Set<DocumentKey> { Set(documents.keys) }

    /// Whether no document is tracked.
    var isEmpty: Bool { documents.isEmpty }

    func contains(_ key: DocumentKey) -> Bool { documents[key] != nil }

    /// The server's fields of a tracked document (`nil`: the server has none, or it is not tracked).
    func serverFields(_ key: DocumentKey) -> EJSONObject? { documents[key]?.fields }

    /// The pending methods whose stubs wrote a tracked document.
    func writers(of key: DocumentKey) -> Set<String> { documents[key]?.writtenByMethods ?? [] }

    /// The tracked documents a pending method's stub wrote, in first-write order.
    func documentsWritten(by methodID: String) -> [DocumentKey] { documentsWrittenByMethod[methodID] ?? [] }

    // MARK: - Stubs

    /// A stub of `methodID` wrote these documents; `originals` are their cache versions from before the stub
    /// (used only for documents not tracked yet: a later stub joins the first one's copy).
    mutating func stubWrote(methodID: String, originals: [(DocumentKey, EJSONObject?)]) {
        guard !originals.isEmpty else { return }
        stubWrites &+= 1
        var written = documentsWrittenByMethod[methodID] ?? []
        for (key, original) in originals {
            if documents[key] == nil {
                documents[key] = ServerDocument(fields: original, writtenByMethods: [])
            }
            if documents[key]!.writtenByMethods.insert(methodID).inserted {
                written.append(key)
                noteChange(key)
            }
        }
        documentsWrittenByMethod[methodID] = written
    }

    // MARK: - Server data

    enum Anomaly: Equatable {
        case addedExistingDocument
        case changedMissingDocument
    }

    /// Where a server update went.
    enum Routing: Equatable {
        /// The document is not tracked: the update goes to the cache.
        case toCache
        /// The tracked copy took it (with an anomaly to log, if any).
        case keptAside(Anomaly?)
    }

    /// An `added` for a tracked document sets the copy; a repeated `added` (the copy exists) merges into it, fields it
    /// does not list kept, as Meteor 3.6 does (PR #14768) and as the cache takes an `added` for a document it has.
    mutating func serverAdded(_ key: DocumentKey, fields: @autoclosure () -> EJSONObject) -> Routing {
        // No stub-written document is tracked, almost always: no hashing of the key.
        guard !documents.isEmpty, documents[key] != nil else { return .toCache }
        noteChange(key)
        guard var current = documents[key]!.fields else {
            documents[key]!.fields = fields()
            return .keptAside(nil)
        }
        for (name, value) in fields() { current[name] = value }
        documents[key]!.fields = current
        return .keptAside(.addedExistingDocument)
    }

    /// A `changed` for a tracked document updates the copy (tolerantly: a change of a missing copy makes one).
    mutating func serverChanged(_ key: DocumentKey, fields: @autoclosure () -> EJSONObject, cleared: [String])
        -> Routing
    {
        guard !documents.isEmpty, documents[key] != nil else { return .toCache }
        noteChange(key)
        guard var current = documents[key]!.fields else {
            documents[key]!.fields = fields()
            return .keptAside(.changedMissingDocument)
        }
        for (name, value) in fields() { current[name] = value }
        for name in cleared { current.removeValue(forKey: name) }
        documents[key]!.fields = current
        return .keptAside(nil)
    }

    /// A `removed` for a tracked document clears the copy.
    mutating func serverRemoved(_ key: DocumentKey) -> Routing {
        guard documents[key] != nil else { return .toCache }
        documents[key]!.fields = nil
        noteChange(key)
        return .keptAside(nil)
    }

    // MARK: - Methods finishing

    /// `updated` for `methodID`: the documents no other pending method wrote are released. Returns their
    /// replacements (to apply to the cache in one batch) and the flush waiters done once they are applied, in the
    /// order they were registered (for each document released, in turn). A document still written by methods that
    /// are not sent (queued behind a wait method) stays, but counts as flushed for its waiters too: those methods
    /// cannot go out before the callers' block is done, so waiting for them would never end.
    mutating func methodUpdated(_ methodID: String, isSent: (String) -> Bool) -> (
        replacements: [Replacement], flushedWaiters: [Int]
    ) {
        guard let keys = documentsWrittenByMethod.removeValue(forKey: methodID) else { return ([], []) }
        var replacements: [Replacement] = []
        var done: [Int] = []
        for key in keys {
            guard var document = documents[key] else { continue }
            document.writtenByMethods.remove(methodID)
            noteChange(key)
            if document.writtenByMethods.isEmpty {
                documents.removeValue(forKey: key)
                replacements.append(Replacement(key: key, fields: document.fields))
                countFlushed(document.flushWaiters, done: &done)
            } else {
                if !document.writtenByMethods.contains(where: isSent) {
                    countFlushed(document.flushWaiters, done: &done)
                    document.flushWaiters = []
                }
                documents[key] = document
            }
        }
        return (replacements, done)
    }

    /// A document the waiters `tokens` waited for is flushed: those it was the last one of are done.
    private mutating func countFlushed(_ tokens: [Int], done: inout [Int]) {
        for token in tokens {
            guard let remaining = waiting[token] else { continue }
            if remaining > 1 {
                waiting[token] = remaining - 1
            } else {
                waiting.removeValue(forKey: token)
                done.append(token)
            }
        }
    }

    /// Registers a flush waiter, done once every document tracked now and written by a method in `sentMethods` has
    /// been flushed (LC `_runWhenAllServerDocsAreFlushed`: documents of unsent methods, queued behind a wait method,
    /// do not count, or the wait method could never finish); ``methodUpdated(_:isSent:)`` returns its token then.
    /// Returns the token, or `nil` if there is no such document: the caller's work is due right away. The caller keeps
    /// the work (several waiters may share a token: theirs is one list, in the order registered). `sentGeneration`
    /// changes whenever a call joins `sentMethods` (``MethodCoordinator/sentGeneration``): the same generation must
    /// always come with the same `sentMethods`, as the coordinator's do.
    ///
    /// Meteor looks at every tracked document and gives each one a callback per waiter; two things keep this from
    /// costing the square of the calls in flight (10,000 calls made offline go out as one block, and each `updated`
    /// registers a waiter):
    /// - the documents of the sent methods are read from their lists when they are fewer, so that a backlog of
    ///   unsent calls does not make every `updated` cost the backlog;
    /// - a waiter joins the one registered before it, if that one still waits and no document has become one of the
    ///   sent calls' since (no call sent, no stub write). Within a generation, documents only leave that set by being
    ///   flushed (``methodUpdated(_:isSent:)`` counts them), so the earlier waiter's documents still to flush are
    ///   exactly the set now: both wait for the same flushes, under one token, and each document holds one token per
    ///   such group, not one per waiter. (A socket reset empties the sent calls without a flush; no waiter is
    ///   registered while none is sent, and sending them again starts a new generation.)
    mutating func runWhenAllFlushed(sentMethods: Set<String>, sentGeneration: Int) -> Int? {
        guard !documents.isEmpty, !sentMethods.isEmpty else { return nil }
        if let latest = latestWaiters, waiting[latest.token] != nil, latest.sentGeneration == sentGeneration,
            latest.stubWrites == stubWrites
        {
            return latest.token
        }
        var counted: Set<DocumentKey> = []
        if sentMethods.count < documents.count {
            // Every key listed for a method is a tracked document that method wrote (see `stubWrote`, `restore`).
            for id in sentMethods { counted.formUnion(documentsWrittenByMethod[id] ?? []) }
        } else {
            for (key, document) in documents where !document.writtenByMethods.isDisjoint(with: sentMethods) {
                counted.insert(key)
            }
        }
        guard !counted.isEmpty else { return nil }
        nextWaiter += 1
        let token = nextWaiter
        waiting[token] = counted.count
        for key in counted { documents[key]!.flushWaiters.append(token) }
        latestWaiters = (token, sentGeneration, stubWrites)
        return token
    }

    /// The flush waiters' tokens the tracked documents hold (for tests: one per group of waiters, per document).
    var flushWaiterCount: Int {
        documents.values.reduce(0) { $0 + $1.flushWaiters.count }
    }

    /// How many flush waiters wait (for tests).
    var waitingFlushWaiters: Int { waiting.count }

    // MARK: - Reconnecting

    /// The first data of a new session is about to be applied (at reconnect quiescence; LC `_livedata_connected`
    /// clears the same state when `connected` arrives). The server's versions are forgotten, since the new session
    /// sends every document it has again, and the flush waiters are dropped (their work is redone for the new
    /// session: the caller drops it). The documents stay tracked: their stubs' methods are re-sent, and their
    /// `updated` brings the server's version into the cache, so stub effects do not flicker away in between.
    mutating func sessionReset() {
        for key in documents.keys {
            noteChange(key)
            documents[key]!.fields = nil
            documents[key]!.flushWaiters.removeAll()
        }
        waiting.removeAll()
        latestWaiters = nil
    }
}
