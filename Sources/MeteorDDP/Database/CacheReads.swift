import EJSON
import OrderedCollections

/// What a piece of code read from the cache inside a write transaction: the documents it looked up by key, the
/// collections it read whole (a query, a count, every document) and whether it listed the collections. With
/// ``PendingStubMode/rebase``, a pending call's stub is replayed when a document it read or wrote changed.
struct CacheReads: Equatable, Sendable {
    /// Documents looked up by key (present or not).
    var documents: Set<DocumentKey> = []
    /// Collections read whole: any change to one of their documents may change what was read.
    var collections: Set<String> = []
    /// The collections were listed: any change may change what was read.
    var everything = false
}

/// Collects ``CacheReads`` while a write transaction's nested part runs (see
/// `Database.performUpdatesRecordingOriginals(markingPendingWrites:recordingReads:_:)`): the transaction's snapshot
/// carries the innermost log, and a read is noted in it and in every enclosing one (a nested call's stub reads on
/// behalf of the stub that made the call too).
final class CacheReadLog: @unchecked Sendable {
    // @unchecked because: used only by the thread inside the write transaction, while its nested part runs (the
    // snapshots that carry it are the transaction's own, which are valid only on that thread).
    let enclosing: CacheReadLog?
    /// The first document looked up (most stubs look up one, often several times): no set is made for it.
    private var firstDocument: DocumentKey?
    private var otherDocuments: Set<DocumentKey> = []
    private var collections: Set<String> = []
    private var everything = false

    init(enclosing: CacheReadLog?) {
        self.enclosing = enclosing
    }

    func noteDocument(_ key: DocumentKey) {
        forEachLog { log in
            if log.firstDocument == nil {
                log.firstDocument = key
            } else if log.firstDocument != key {
                log.otherDocuments.insert(key)
            }
        }
    }

    func noteCollection(_ name: String) {
        forEachLog { $0.collections.insert(name) }
    }

    func noteEverything() {
        forEachLog { $0.everything = true }
    }

    /// Calls `body` with this log and every enclosing one.
    private func forEachLog(_ body: (CacheReadLog) -> Void) {
        var log: CacheReadLog? = self
        while let current = log {
            body(current)
            log = current.enclosing
        }
    }

    /// What was read, but the documents in `written` (a pending call is found through the documents it wrote, as
    /// their writer: listing them as read too would only double its entries).
    func reads(excluding written: OrderedDictionary<DocumentKey, EJSONObject?>) -> CacheReads {
        var reads = CacheReads(collections: collections, everything: everything)
        if let firstDocument, written[firstDocument] == nil { reads.documents.insert(firstDocument) }
        for key in otherDocuments where written[key] == nil { reads.documents.insert(key) }
        return reads
    }
}
