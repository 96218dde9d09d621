import HashTreeCollections

/// Where the cache's data stands, beyond the documents themselves (Firestore's `hasPendingWrites` and `fromCache`,
/// which Meteor lacks): which documents hold local writes the server has not confirmed yet, and whether the data was
/// restored from the offline store and not yet confirmed by a connection. Part of every committed snapshot; a
/// transaction that changes it posts one ``DatabaseChanges`` saying what changed (``DatabaseChanges/metadataChange``).
///
/// A ``DDPClient`` keeps it: a document is pending from the moment a call's stub writes it until the server's version
/// replaces the stub's (the last call that wrote it has its `updated`), in either ``PendingStubMode``; the cache is
/// from the offline store from launch until the first connection's data has reconciled it.
public struct CacheMetadata: Sendable, Equatable {
    /// The documents holding pending writes, as a persistent hash tree: a transaction that marks a document copies
    /// one path of it, not the whole set, and comparing it with the version it came from skips the parts they share
    /// (with thousands of pending calls, a new call's commit costs its own documents, not the backlog).
    var pendingWrites: TreeSet<DocumentKey> = []
    /// Whether the data was restored from the offline store and the first connection has not reconciled it yet.
    public internal(set) var isFromCache = false

    init(pendingWrites: TreeSet<DocumentKey> = [], isFromCache: Bool = false) {
        self.pendingWrites = pendingWrites
        self.isFromCache = isFromCache
    }

    /// The documents holding local writes the server has not confirmed yet (made from the metadata's own set at each
    /// call: for one document, ask ``hasPendingWrites(_:)``).
    public var documentsWithPendingWrites: Set<DocumentKey> { Set(pendingWrites) }

    /// Whether a document holds local writes the server has not confirmed yet.
    public func hasPendingWrites(_ key: DocumentKey) -> Bool {
        !pendingWrites.isEmpty && pendingWrites.contains(key)
    }

    /// What a result made of `documents` of `collection` says.
    func result(collection: String, documents: [Document]) -> ResultMetadata {
        ResultMetadata(
            hasPendingWrites: hasPendingWrites(collection: collection, ids: documents.lazy.map(\.id)),
            isFromCache: isFromCache)
    }

    /// Whether any of these documents of `collection` holds pending writes (pending documents are few: each is
    /// looked up, when they are fewer than the ids).
    func hasPendingWrites(collection: String, ids: some Collection<String>) -> Bool {
        guard !pendingWrites.isEmpty else { return false }
        if pendingWrites.count < ids.count {
            let pending = pendingWrites.lazy.filter { $0.collectionName == collection }.map(\.documentID)
            guard !pending.isEmpty else { return false }
            let wanted = Set(pending)
            return ids.contains(where: wanted.contains)
        }
        return ids.contains { pendingWrites.contains(DocumentKey(collectionName: collection, documentID: $0)) }
    }
}

/// What one transaction (or several merged) changed of the ``CacheMetadata``.
public struct CacheMetadataChange: Sendable, Equatable {
    /// The documents that started or stopped holding pending writes.
    public internal(set) var pendingWritesChanged: Set<DocumentKey> = []
    /// Whether ``CacheMetadata/isFromCache`` changed.
    public internal(set) var fromCacheChanged = false

    /// Whether nothing changed.
    public var isEmpty: Bool { pendingWritesChanged.isEmpty && !fromCacheChanged }

    init() {}

    init(from before: CacheMetadata, to after: CacheMetadata) {
        if before.pendingWrites != after.pendingWrites {
            pendingWritesChanged = Set(before.pendingWrites.symmetricDifference(after.pendingWrites))
        }
        fromCacheChanged = before.isFromCache != after.isFromCache
    }

    /// Folds later changes into these (a flag changed twice may be back where it was: it counts as changed).
    mutating func merge(_ later: CacheMetadataChange) {
        pendingWritesChanged.formUnion(later.pendingWritesChanged)
        fromCacheChanged = fromCacheChanged || later.fromCacheChanged
    }

    /// Whether the change concerns a result of `collection` holding these ids (before or after).
    func concerns(collection: String, ids: some Collection<String>) -> Bool {
        if fromCacheChanged { return true }
        guard !pendingWritesChanged.isEmpty else { return false }
        return CacheMetadata(pendingWrites: TreeSet(pendingWritesChanged)).hasPendingWrites(
            collection: collection, ids: ids)
    }
}

/// What a result (a query's, a live query's snapshot, an observed query's) says about where its documents stand.
public struct ResultMetadata: Sendable, Equatable, Hashable {
    /// Whether any of its documents holds local writes the server has not confirmed yet.
    public let hasPendingWrites: Bool
    /// Whether its data was restored from the offline store and not yet confirmed by a connection.
    public let isFromCache: Bool

    public init(hasPendingWrites: Bool = false, isFromCache: Bool = false) {
        self.hasPendingWrites = hasPendingWrites
        self.isFromCache = isFromCache
    }
}
