/// One collection's documents by id: a persistent hash table whose versions share everything they did not change.
///
/// The table is an array of small buckets, each a copy-on-write array of documents (the document holds its own id,
/// so an entry is one reference and a cached hash). A write transaction copies the bucket array once, and each
/// bucket it touches once; every other bucket stays shared with the versions readers may still hold. Buckets stay
/// small (the table doubles when they average more than ``maximumLoad`` documents), so copying one costs a few
/// retains: much less than the copied path of a general hash tree (swift-collections' TreeDictionary, which this
/// replaced for documents: the cache spent most of its write time copying, then freeing, its 32-wide nodes).
struct DocumentTable: Sendable {
    struct Entry: Sendable {
        let hash: Int
        var document: Document
    }

    typealias Bucket = ContiguousArray<Entry>

    /// The average number of documents per bucket above which the table doubles.
    static let maximumLoad = 8
    static let minimumBucketCount = 8

    /// A power of two buckets.
    private var buckets: ContiguousArray<Bucket>
    /// The number of documents.
    private(set) var count: Int

    /// An empty table.
    init() {
        buckets = ContiguousArray(repeating: Bucket(), count: Self.minimumBucketCount)
        count = 0
    }

    var isEmpty: Bool { count == 0 }

    // MARK: - Reading

    /// The document with this id.
    subscript(id: String) -> Document? {
        let (hash, bucketIndex) = locate(id)
        return position(of: id, hash: hash, in: bucketIndex).map { buckets[bucketIndex][$0].document }
    }

    /// The hash of `id` and the bucket it belongs in.
    private func locate(_ id: String) -> (hash: Int, bucket: Int) {
        let hash = id.hashValue
        return (hash, hash & (buckets.count - 1))
    }

    /// Where the document with this id and hash sits in its bucket.
    private func position(of id: String, hash: Int, in bucketIndex: Int) -> Int? {
        buckets.withUnsafeBufferPointer { all in
            all[bucketIndex].withUnsafeBufferPointer { entries in
                entries.firstIndex { $0.hash == hash && $0.document.id == id }
            }
        }
    }

    /// Every document, in no particular order.
    var documents: [Document] {
        var documents: [Document] = []
        documents.reserveCapacity(count)
        for bucket in buckets {
            for entry in bucket { documents.append(entry.document) }
        }
        return documents
    }

    /// Every id, in no particular order.
    var ids: [String] { documents.map(\.id) }

    // MARK: - Writing

    /// Calls `body` with the document stored under `id` (`nil`: none) and stores what it leaves there (`nil` removes
    /// the document). One hash, one bucket scan; a bucket is copied only if it is shared and actually changes.
    mutating func updateValue<R>(forKey id: String, with body: (inout Document?) throws -> R) rethrows -> R {
        let (hash, bucketIndex) = locate(id)
        let position = position(of: id, hash: hash, in: bucketIndex)
        let old = position.map { buckets[bucketIndex][$0].document }
        var slot = old
        let result = try body(&slot)
        switch (position, slot) {
        case (let position?, let new?):
            if !new.isIdentical(to: old!) { buckets[bucketIndex][position].document = new }
        case (let position?, nil):
            let last = buckets[bucketIndex].count - 1
            if position != last { buckets[bucketIndex].swapAt(position, last) }
            buckets[bucketIndex].removeLast()
            count -= 1
            if count < buckets.count / 2, buckets.count > Self.minimumBucketCount { rebuild(bucketCount: buckets.count / 2) }
        case (nil, let new?):
            buckets[bucketIndex].append(Entry(hash: hash, document: new))
            count += 1
            if count > buckets.count * Self.maximumLoad { rebuild(bucketCount: buckets.count * 2) }
        case (nil, nil):
            break
        }
        return result
    }

    /// Redistributes every document over `bucketCount` buckets (amortised over the writes that made it necessary).
    private mutating func rebuild(bucketCount: Int) {
        var rebuilt = ContiguousArray(repeating: Bucket(), count: bucketCount)
        for bucket in buckets {
            for entry in bucket { rebuilt[entry.hash & (bucketCount - 1)].append(entry) }
        }
        buckets = rebuilt
    }
}
