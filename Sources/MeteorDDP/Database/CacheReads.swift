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

    /// Whether a change to the document with this key may change what was read.
    func include(_ key: DocumentKey) -> Bool {
        everything || collections.contains(key.collectionName) || documents.contains(key)
    }
}

/// Collects ``CacheReads`` while a write transaction's nested part runs (see
/// `Database.performUpdatesRecordingOriginals(markingPendingWrites:recordingReads:_:)`): the transaction's snapshot
/// carries the innermost log, and a read is noted in it and in every enclosing one (a nested call's stub reads on
/// behalf of the stub that made the call too).
final class CacheReadLog: @unchecked Sendable {
    // @unchecked because: used only by the thread inside the write transaction, while its nested part runs (the
    // snapshots that carry it are the transaction's own, which are valid only on that thread).
    private(set) var reads = CacheReads()
    let enclosing: CacheReadLog?

    init(enclosing: CacheReadLog?) {
        self.enclosing = enclosing
    }

    func noteDocument(_ key: DocumentKey) {
        var log: CacheReadLog? = self
        while let current = log {
            current.reads.documents.insert(key)
            log = current.enclosing
        }
    }

    func noteCollection(_ name: String) {
        var log: CacheReadLog? = self
        while let current = log {
            current.reads.collections.insert(name)
            log = current.enclosing
        }
    }

    func noteEverything() {
        var log: CacheReadLog? = self
        while let current = log {
            current.reads.everything = true
            log = current.enclosing
        }
    }
}
