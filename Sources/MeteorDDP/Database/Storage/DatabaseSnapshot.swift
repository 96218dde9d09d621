import Atomics
import EJSON
import HashTreeCollections
import NIOConcurrencyHelpers

/// A version of the whole cache: its collections' ``DocumentTable``s by name. A committed snapshot holds its
/// ``SnapshotGeneration``, which keeps the tables' memory alive for as long as the snapshot is used.
struct DatabaseSnapshot: Sendable {
    private(set) var collections: TreeDictionary<String, DocumentTable> = [:]
    /// Keeps the tables' memory alive (`nil` for the empty snapshot and for an open transaction's own state, which
    /// the transaction keeps alive and which is valid only until its next write).
    private(set) var generation: SnapshotGeneration?
    /// Which documents hold pending writes, whether the data is from the offline store.
    var metadata: CacheMetadata
    /// Where reads are noted: set only on an open transaction's own state, while a part of it that records its reads
    /// runs (a stub, with ``PendingStubMode/rebase``).
    var readLog: CacheReadLog?

    init(
        collections: TreeDictionary<String, DocumentTable> = [:], generation: SnapshotGeneration? = nil,
        metadata: CacheMetadata = CacheMetadata()
    ) {
        self.collections = collections
        self.generation = generation
        self.metadata = metadata
    }

    func document(_ key: DocumentKey) -> Document? {
        readLog?.noteDocument(key)
        return collections[key.collectionName]?[key.documentID]
    }

    /// The table of a collection. Its memory is owned by this snapshot's generation: read it only while the snapshot
    /// is alive (a temporary snapshot may be released as soon as this returns). ``allDocuments(in:)`` and
    /// ``documentCount(in:)`` read within the snapshot's lifetime.
    func documents(in collection: String) -> DocumentTable {
        readLog?.noteCollection(collection)
        return collections[collection] ?? DocumentTable()
    }

    /// Every document of a collection (the table is walked while `self`, the caller's snapshot, keeps it alive).
    func allDocuments(in collection: String) -> [Document] {
        withExtendedLifetime(self) { documents(in: collection).documents }
    }

    /// How many documents a collection has.
    func documentCount(in collection: String) -> Int {
        withExtendedLifetime(self) { documents(in: collection).count }
    }

    mutating func setTable(_ name: String, _ table: DocumentTable) {
        if table.isEmpty { collections.removeValue(forKey: name) } else { collections[name] = table }
    }

    var allKeys: [DocumentKey] {
        collections.flatMap { name, table in table.ids.map { DocumentKey(collectionName: name, documentID: $0) } }
    }
}

/// One committed version of the cache and the owner of its memory; the database publishes the newest one
/// atomically and readers load it without taking any lock.
///
/// Generations are reclaimed in commit order, and a generation that is not the newest owns only what it can see and
/// its successor cannot (its ``RetiredMemory``). Each generation holds its successor, so while any reader keeps an
/// old generation, every later one (and the memory they retired) stays alive; when the oldest goes, it frees its
/// retired memory and lets go of the next. The newest generation owns everything reachable from its tables.
final class SnapshotGeneration: AtomicReference, @unchecked Sendable {
    // @unchecked because: `collections` is immutable and its memory read-only once published; `state` is protected
    // by its lock.

    /// Who owns what. Protected by its lock.
    private struct State {
        /// The newest generation owns all its tables' memory.
        var isNewest = true
        /// A superseded one owns what it retired ...
        var retired = RetiredMemory()
        /// ... and holds its successor (`nil` for the newest, and once handed on).
        var successor: SnapshotGeneration?
    }

    let collections: TreeDictionary<String, DocumentTable>
    private let state = NIOLockedValueBox(State())

    let metadata: CacheMetadata
    /// How many change sets had been committed when this generation was published (its own included): a consumer of
    /// ``Database/changes`` made while it is the newest skips the deliveries numbered up to this.
    let changeSetsCommitted: UInt64

    init(
        collections: TreeDictionary<String, DocumentTable>, metadata: CacheMetadata = CacheMetadata(),
        changeSetsCommitted: UInt64 = 0
    ) {
        self.collections = collections
        self.metadata = metadata
        self.changeSetsCommitted = changeSetsCommitted
    }

    var snapshot: DatabaseSnapshot { DatabaseSnapshot(collections: collections, generation: self, metadata: metadata) }

    /// Records that `successor` replaced this generation, and what this one alone still uses.
    func supersede(by successor: SnapshotGeneration, retiring retired: RetiredMemory) {
        state.withLockedValue { state in
            precondition(state.isNewest, "a generation is superseded once")
            state = State(isNewest: false, retired: retired, successor: successor)
        }
    }

    /// Takes this generation's memory, leaving it owning nothing.
    private func take() -> State {
        state.withLockedValue { state in
            let taken = state
            state = State(isNewest: false)
            return taken
        }
    }

    deinit {
        // Frees along the chain without recursing: a successor that nobody else holds is taken over here.
        var taken = take()
        var owner: SnapshotGeneration? = nil
        while true {
            if taken.isNewest {
                for (_, table) in (owner?.collections ?? collections) { table.releaseEverything() }
                return
            }
            taken.retired.release()
            guard var next = taken.successor else { return }
            taken.successor = nil
            guard isKnownUniquelyReferenced(&next) else { return }
            taken = next.take()
            owner = next
        }
    }
}
