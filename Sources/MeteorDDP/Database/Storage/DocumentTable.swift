/// One collection's documents by id, in one version of the cache: a hash table whose versions share every bucket
/// they did not change, without reference counting between them.
///
/// The table is a directory of small buckets in raw memory; a bucket holds `(hash, document)` entries, the document
/// as an unmanaged reference (it holds its own id). A write transaction (identified by its `epoch`) copies the
/// directory once and each bucket it touches once (a `memcpy`: no retain per shared document, no release when the
/// old version dies); whatever the new version no longer uses (the old directory, old buckets, replaced documents)
/// goes to a ``RetiredMemory`` list, freed when no snapshot that can see it is left (see ``SnapshotGeneration``).
/// The memory reachable from the newest version belongs to the newest generation.
///
/// Ownership: every document in the newest version is retained once by it; a document leaves the table by moving
/// that retain to the retired list. A `DocumentTable` value is only valid while the generation (or the open
/// transaction) it came from is alive: ``DatabaseSnapshot`` keeps its generation for that reason.
///
/// Profiles of the persistent versions this replaced (swift-collections' TreeDictionary, then an array of
/// copy-on-write Swift arrays) showed most of the write time retaining every shared element when a node was copied
/// and releasing them all again when the old version died.
struct DocumentTable: @unchecked Sendable {
    // @unchecked because: the raw memory is written only by the transaction whose epoch allocated it, before the
    // version is published; published versions are read-only.

    /// The average number of documents per bucket above which the table doubles.
    static let maximumLoad = 8
    static let minimumBucketCount = 8

    /// `bucketCount` bucket pointers (`nil`: empty bucket), or `nil` for an empty table.
    private var directory: UnsafeMutablePointer<DocumentBucket?>?
    /// A power of two, or 0.
    private var bucketCount: Int
    /// The epoch of the transaction that allocated `directory` (only that transaction may write it).
    private var epoch: UInt64
    /// The number of documents.
    private(set) var count: Int

    /// An empty table.
    init() {
        directory = nil
        bucketCount = 0
        epoch = 0
        count = 0
    }

    var isEmpty: Bool { count == 0 }

    // MARK: - Reading

    /// The document with this id (the lookup a write makes too: ``locate(_:epoch:)``; epoch 0 is no transaction's,
    /// and the change it reads is not used).
    subscript(id: String) -> Document? {
        locate(id, epoch: 0).document.map { Document(storage: $0.takeUnretainedValue()) }
    }

    /// Every document, in no particular order.
    var documents: [Document] {
        var documents: [Document] = []
        documents.reserveCapacity(count)
        forEachBucket { bucket in
            for position in 0..<bucket.count { documents.append(bucket.document(at: position)) }
        }
        return documents
    }

    /// Every id, in no particular order.
    var ids: [String] { documents.map(\.id) }

    private func forEachBucket(_ body: (DocumentBucket) -> Void) {
        guard let directory else { return }
        for index in 0..<bucketCount {
            if let bucket = directory[index] { body(bucket) }
        }
    }

    // MARK: - Writing

    /// Where the document with an id is, or would go, in one version of the table: found once for a write
    /// (``locate(_:epoch:)``), then written there (``write(_:change:at:epoch:retiring:)``) with nothing written
    /// between.
    struct Location {
        let hash: Int
        /// Its position in its bucket (`nil`: no such document).
        let position: Int?
        /// Where the transaction listed the document's change (-1: not yet).
        let change: Int32
        /// The stored document, not retained: valid until the table is written.
        let document: Unmanaged<Document.Storage>?
    }

    /// Where the document with this id is, or would go, for the transaction `epoch`. One hash, one bucket scan.
    func locate(_ id: String, epoch: UInt64) -> Location {
        locate(id, hash: id.hashValue, epoch: epoch)
    }

    /// ``locate(_:epoch:)`` for a document that `earlier`, a lookup of the same id in a version this one was made
    /// from, found: if that very document still sits where it was, neither the hash nor the bucket scan is repeated.
    /// (A stored document holds its id, and an id is stored once, so the same document at the same place is the
    /// answer; a document moved by a removal or a rebuild is looked up again, with the hash already known.)
    func locate(_ id: String, epoch: UInt64, knownAt earlier: Location) -> Location {
        if let position = earlier.position, let found = earlier.document, let directory,
            let bucket = directory[earlier.hash & (bucketCount &- 1)], position < bucket.count,
            bucket.entry(at: position).document.toOpaque() == found.toOpaque()
        {
            return Location(
                hash: earlier.hash, position: position,
                change: bucket.epoch == epoch ? bucket.change(at: position) : -1,
                document: found)
        }
        return locate(id, hash: earlier.hash, epoch: epoch)
    }

    private func locate(_ id: String, hash: Int, epoch: UInt64) -> Location {
        guard let directory, let bucket = directory[hash & (bucketCount &- 1)],
            let position = bucket.position(of: id, hash: hash)
        else {
            return Location(hash: hash, position: nil, change: -1, document: nil)
        }
        return Location(
            hash: hash, position: position, change: bucket.epoch == epoch ? bucket.change(at: position) : -1,
            document: bucket.entry(at: position).document)
    }

    /// Stores `new` (`nil` removes the document) where `location` says, listed at `change`, as part of the transaction
    /// `epoch` (greater than that of every version before). What the previous version still uses and this one no
    /// longer does goes to `retired`. The directory and the bucket are copied only if an earlier version owns them and
    /// something actually changes.
    mutating func write(
        _ new: Document?, change: Int32, at location: Location, epoch: UInt64, retiring retired: inout RetiredMemory
    ) {
        let hash = location.hash
        assert(
            location.position == nil
                || directory?[hash & (bucketCount &- 1)]?.entry(at: location.position!).document.toOpaque()
                    == location.document?.toOpaque(),
            "a location written after the table changed")
        switch (location.position, new) {
        case (let position?, let new?):
            let replacing = Unmanaged.passUnretained(new.storage).toOpaque() != location.document!.toOpaque()
            guard replacing || change != location.change else { return }
            let writable = writableBucket(
                at: hash & (bucketCount &- 1), epoch: epoch, minimumCapacity: 0, retired: &retired)
            if replacing { retired.documents.append(writable.replaceDocument(at: position, with: new)) }
            writable.setChange(change, at: position)
        case (let position?, nil):
            let writable = writableBucket(
                at: hash & (bucketCount &- 1), epoch: epoch, minimumCapacity: 0, retired: &retired)
            retired.documents.append(writable.removeDocument(at: position))
            count -= 1
            if count == 0 {
                retireEverything(into: &retired)
            } else if count < bucketCount / 2, bucketCount > Self.minimumBucketCount {
                rebuild(bucketCount: bucketCount / 2, epoch: epoch, retired: &retired)
            }
        case (nil, let new?):
            if directory == nil { rebuild(bucketCount: Self.minimumBucketCount, epoch: epoch, retired: &retired) }
            let index = hash & (bucketCount - 1)
            let writable = writableBucket(
                at: index, epoch: epoch, minimumCapacity: (directory![index]?.count ?? 0) + 1, retired: &retired)
            writable.append(hash: hash, change: change, document: new)
            count += 1
            if count > bucketCount * Self.maximumLoad {
                rebuild(bucketCount: bucketCount * 2, epoch: epoch, retired: &retired)
            }
        case (nil, nil):
            break
        }
    }

    /// Calls `body` with the document stored under `id` (`nil`: none) and stores what it leaves there (`nil` removes
    /// the document), as ``locate(_:epoch:)`` then ``write(_:change:at:epoch:retiring:)`` do.
    ///
    /// `body` also gets where this transaction listed the document's change (-1: not yet); a stored document keeps
    /// what `body` leaves there, so the transaction finds its change list entry again without a lookup of its own.
    mutating func updateValue<R>(
        forKey id: String, epoch: UInt64, retiring retired: inout RetiredMemory,
        with body: (_ document: inout Document?, _ change: inout Int32) throws -> R
    ) rethrows -> R {
        let location = locate(id, epoch: epoch)
        var slot = location.document.map { Document(storage: $0.takeUnretainedValue()) }
        var change = location.change
        let result = try body(&slot, &change)
        write(slot, change: change, at: location, epoch: epoch, retiring: &retired)
        return result
    }

    /// The bucket at `index`, writable by the transaction `epoch` and with room for `minimumCapacity` entries: the
    /// directory and the bucket are copied first if an earlier version owns them.
    private mutating func writableBucket(
        at index: Int, epoch: UInt64, minimumCapacity: Int, retired: inout RetiredMemory
    ) -> DocumentBucket {
        if self.epoch != epoch {
            let copy = UnsafeMutablePointer<DocumentBucket?>.allocate(capacity: bucketCount)
            copy.initialize(from: directory!, count: bucketCount)
            retired.blocks.append(UnsafeMutableRawPointer(directory!))
            directory = copy
            self.epoch = epoch
        }
        let current = directory![index]
        if let current, current.epoch == epoch, current.capacity >= minimumCapacity { return current }
        let copy = DocumentBucket.allocate(capacity: max(minimumCapacity, (current?.count ?? 0) + 2), epoch: epoch)
        if let current {
            copy.appendEntries(of: current)
            if current.epoch == epoch { current.deallocate() } else { retired.blocks.append(current.rawPointer) }
        }
        directory![index] = copy
        return copy
    }

    /// Redistributes every document over `bucketCount` new buckets; the old directory and buckets are retired
    /// (amortised over the writes that made it necessary).
    private mutating func rebuild(bucketCount newCount: Int, epoch: UInt64, retired: inout RetiredMemory) {
        let rebuilt = UnsafeMutablePointer<DocumentBucket?>.allocate(capacity: newCount)
        rebuilt.initialize(repeating: nil, count: newCount)
        let capacity = Self.maximumLoad + 2
        forEachBucket { bucket in
            for position in 0..<bucket.count {
                var entry = bucket.entry(at: position)
                if bucket.epoch != epoch { entry.change = -1 }
                let index = Int(entry.hash) & (newCount - 1)
                var target = rebuilt[index] ?? DocumentBucket.allocate(capacity: capacity, epoch: epoch)
                if target.count == target.capacity {
                    let larger = DocumentBucket.allocate(capacity: target.capacity * 2, epoch: epoch)
                    larger.appendEntries(of: target)
                    target.deallocate()
                    target = larger
                }
                target.append(entry)
                rebuilt[index] = target
            }
        }
        retireStructure(into: &retired)
        directory = rebuilt
        bucketCount = newCount
        self.epoch = epoch
    }

    /// Retires the directory and every bucket (not the documents) and leaves the table empty.
    private mutating func retireEverything(into retired: inout RetiredMemory) {
        retireStructure(into: &retired)
        self = DocumentTable()
    }

    private func retireStructure(into retired: inout RetiredMemory) {
        guard let directory else { return }
        forEachBucket { retired.blocks.append($0.rawPointer) }
        retired.blocks.append(UnsafeMutableRawPointer(directory))
    }

    /// Frees the directory and the buckets and releases every document: for the newest version only, once nothing
    /// can read it any more.
    func releaseEverything() {
        var retired = RetiredMemory()
        forEachBucket { bucket in
            for position in 0..<bucket.count { retired.documents.append(bucket.entry(at: position).document) }
        }
        retireStructure(into: &retired)
        retired.release()
    }
}

/// Memory a version no longer uses but an older one may: blocks to free and documents to release.
struct RetiredMemory: @unchecked Sendable {
    // @unchecked because: the blocks and documents belong to this list alone once retired.
    var blocks: [UnsafeMutableRawPointer] = []
    var documents: [Unmanaged<Document.Storage>] = []

    var isEmpty: Bool { blocks.isEmpty && documents.isEmpty }

    /// Frees the blocks and releases the documents.
    mutating func release() {
        for block in blocks { block.deallocate() }
        for document in documents { document.release() }
        blocks = []
        documents = []
    }
}
