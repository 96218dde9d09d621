/// One bucket of a ``DocumentTable``: a header and `(hash, change, document)` entries in one raw allocation. It owns
/// nothing: the table decides who frees it and who releases its documents.
struct DocumentBucket {
    struct Header {
        /// The transaction that allocated the bucket: only it may write the bucket.
        let epoch: UInt64
        let capacity: Int32
        var count: Int32
    }

    struct Entry {
        /// The low 32 bits of the id's hash (enough to place it in any table, and to skip most id comparisons).
        let hash: UInt32
        /// Where the transaction that allocated the bucket listed this document's change (-1: it did not change it).
        var change: Int32
        var document: Unmanaged<Document.Storage>
    }

    /// The entries start one header stride after the header (both 8-byte aligned).
    private static let entriesOffset = MemoryLayout<Header>.stride

    let rawPointer: UnsafeMutableRawPointer

    private var header: UnsafeMutablePointer<Header> { rawPointer.assumingMemoryBound(to: Header.self) }
    private var entries: UnsafeMutablePointer<Entry> {
        (rawPointer + Self.entriesOffset).assumingMemoryBound(to: Entry.self)
    }

    /// An empty bucket with room for `capacity` entries.
    static func allocate(capacity: Int, epoch: UInt64) -> DocumentBucket {
        let raw = UnsafeMutableRawPointer.allocate(
            byteCount: entriesOffset + capacity * MemoryLayout<Entry>.stride, alignment: MemoryLayout<Entry>.alignment)
        raw.initializeMemory(
            as: Header.self, repeating: Header(epoch: epoch, capacity: Int32(capacity), count: 0), count: 1)
        return DocumentBucket(rawPointer: raw)
    }

    func deallocate() { rawPointer.deallocate() }

    var epoch: UInt64 { header.pointee.epoch }
    var count: Int { Int(header.pointee.count) }
    var capacity: Int { Int(header.pointee.capacity) }

    // MARK: - Reading

    /// Where the document with this id and hash sits.
    func position(of id: String, hash: Int) -> Int? {
        let hash = UInt32(truncatingIfNeeded: hash)
        for position in 0..<count where entries[position].hash == hash {
            if entries[position].document._withUnsafeGuaranteedRef({ $0.hasID(id) }) { return position }
        }
        return nil
    }

    func entry(at position: Int) -> Entry { entries[position] }

    /// Where this bucket's transaction listed the change of the document at `position` (-1: none).
    func change(at position: Int) -> Int32 { entries[position].change }

    /// The document at `position` (retained for the caller).
    func document(at position: Int) -> Document {
        Document(storage: entries[position].document.takeUnretainedValue())
    }

    // MARK: - Writing (only by the transaction that allocated the bucket)

    /// Appends an entry; the caller has made room. The bucket takes over a retain of its document.
    func append(_ entry: Entry) {
        precondition(count < capacity, "bucket full")
        (entries + count).initialize(to: entry)
        header.pointee.count += 1
    }

    /// Appends `document`, retaining it.
    func append(hash: Int, change: Int32, document: Document) {
        append(
            Entry(
                hash: UInt32(truncatingIfNeeded: hash), change: change,
                document: Unmanaged.passRetained(document.storage)))
    }

    /// Appends every entry of `other` (no retains: the entries' ownership stays with whoever had it). Changes listed
    /// by another transaction than this bucket's are not this one's: they are cleared.
    func appendEntries(of other: DocumentBucket) {
        precondition(count + other.count <= capacity, "bucket full")
        let start = entries + count
        start.initialize(from: other.entries, count: other.count)
        if other.epoch != epoch {
            for position in 0..<other.count { start[position].change = -1 }
        }
        header.pointee.count += Int32(other.count)
    }

    /// Records where this bucket's transaction listed the change of the document at `position`.
    func setChange(_ change: Int32, at position: Int) {
        entries[position].change = change
    }

    /// Stores `document` (retained) at `position` and returns the document it replaces, whose retain the caller
    /// takes over.
    func replaceDocument(at position: Int, with document: Document) -> Unmanaged<Document.Storage> {
        let old = entries[position].document
        entries[position].document = Unmanaged.passRetained(document.storage)
        return old
    }

    /// Removes the entry at `position` (the last entry takes its place) and returns its document, whose retain the
    /// caller takes over.
    func removeDocument(at position: Int) -> Unmanaged<Document.Storage> {
        let old = entries[position].document
        let last = count - 1
        if position != last { entries[position] = entries[last] }
        header.pointee.count -= 1
        return old
    }
}
