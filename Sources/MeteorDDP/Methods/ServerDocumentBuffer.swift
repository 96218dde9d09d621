import EJSON

/// The server's version of every document a stub wrote, kept aside until every method that wrote it is done
/// (LC `_serverDocuments`, `_documentsWrittenByStub`, `_process_updated`).
///
/// While a document is here, server data for it updates this copy instead of the cache. When the last method that
/// wrote it gets its `updated`, the copy replaces whatever the stubs left in the cache (applying the server's
/// version, or reverting the stub). A value type with no I/O, confined to the client queue.
struct ServerDocumentBuffer {
    struct ServerDocument {
        /// The server's fields (`nil`: the server has no such document).
        var fields: EJSONObject?
        /// Methods whose stubs wrote the document and that have no `updated` yet.
        var writtenByMethods: Set<String>
        /// Callbacks waiting for the document to be flushed to the cache.
        var flushCallbacks: [@Sendable () -> Void] = []
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

    var isEmpty: Bool { documents.isEmpty }

    func contains(_ key: DocumentKey) -> Bool { documents[key] != nil }

    // MARK: - Stubs

    /// A stub of `methodID` wrote these documents; `originals` are their cache versions from before the stub
    /// (used only for documents not tracked yet: a later stub joins the first one's copy).
    mutating func stubWrote(methodID: String, originals: [(DocumentKey, EJSONObject?)]) {
        guard !originals.isEmpty else { return }
        var written = documentsWrittenByMethod[methodID] ?? []
        for (key, original) in originals {
            if documents[key] == nil {
                documents[key] = ServerDocument(fields: original, writtenByMethods: [])
            }
            if documents[key]!.writtenByMethods.insert(methodID).inserted {
                written.append(key)
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

    /// An `added` for a tracked document updates the copy.
    mutating func serverAdded(_ key: DocumentKey, fields: EJSONObject) -> Routing {
        guard documents[key] != nil else { return .toCache }
        let anomaly: Anomaly? = documents[key]!.fields == nil ? nil : .addedExistingDocument
        documents[key]!.fields = fields
        return .keptAside(anomaly)
    }

    /// A `changed` for a tracked document updates the copy (tolerantly: a change of a missing copy makes one).
    mutating func serverChanged(_ key: DocumentKey, fields: EJSONObject, cleared: [String]) -> Routing {
        guard documents[key] != nil else { return .toCache }
        guard var current = documents[key]!.fields else {
            documents[key]!.fields = fields
            return .keptAside(.changedMissingDocument)
        }
        for (name, value) in fields { current[name] = value }
        for name in cleared { current.removeValue(forKey: name) }
        documents[key]!.fields = current
        return .keptAside(nil)
    }

    /// A `removed` for a tracked document clears the copy.
    mutating func serverRemoved(_ key: DocumentKey) -> Routing {
        guard documents[key] != nil else { return .toCache }
        documents[key]!.fields = nil
        return .keptAside(nil)
    }

    // MARK: - Methods finishing

    /// `updated` for `methodID`: the documents no other pending method wrote are released. Returns their
    /// replacements (to apply to the cache in one batch) and the flush callbacks to run once applied.
    mutating func methodUpdated(_ methodID: String) -> (replacements: [Replacement], callbacks: [@Sendable () -> Void]) {
        guard let keys = documentsWrittenByMethod.removeValue(forKey: methodID) else { return ([], []) }
        var replacements: [Replacement] = []
        var callbacks: [@Sendable () -> Void] = []
        for key in keys {
            guard var document = documents[key] else { continue }
            document.writtenByMethods.remove(methodID)
            if document.writtenByMethods.isEmpty {
                documents.removeValue(forKey: key)
                replacements.append(Replacement(key: key, fields: document.fields))
                callbacks += document.flushCallbacks
            } else {
                documents[key] = document
            }
        }
        return (replacements, callbacks)
    }

    /// Runs `callback` once every document tracked now has been flushed (LC `_runWhenAllServerDocsAreFlushed`).
    /// Returns `false` if nothing is tracked: the caller runs it right away.
    mutating func runWhenAllFlushed(_ callback: @escaping @Sendable () -> Void) -> Bool {
        guard !documents.isEmpty else { return false }
        let counter = FlushCountdown(count: documents.count, callback: callback)
        for key in documents.keys {
            documents[key]!.flushCallbacks.append { counter.decrement() }
        }
        return true
    }

    /// Forgets everything (a reconnect resets the stores; LC `_livedata_connected`).
    mutating func reset() {
        documents.removeAll()
        documentsWrittenByMethod.removeAll()
    }
}

/// Calls its callback when decremented `count` times.
final class FlushCountdown: @unchecked Sendable {
    // @unchecked because `remaining` is only touched on the client queue (flush callbacks run there).
    private var remaining: Int
    private let callback: @Sendable () -> Void

    init(count: Int, callback: @escaping @Sendable () -> Void) {
        self.remaining = count
        self.callback = callback
    }

    func decrement() {
        remaining -= 1
        if remaining == 0 { callback() }
    }
}
