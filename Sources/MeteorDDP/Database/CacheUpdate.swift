import Dispatch
import EJSON

/// One change to the cache in the cache's own form: a ``DataUpdate`` whose fields are packed into a ``Document``
/// (with the key's id), once, before it reaches the write transaction. Server data decoded by
/// `DocumentMessageDecoder` arrives packed already; ``DataUpdate``s (the public form: stubs, local writes, apps
/// applying updates themselves) are packed when they are queued.
enum CacheUpdate: Sendable {
    /// See ``DataUpdate/added(_:_:)``: for a new document, this very document goes into the cache.
    case added(DocumentKey, Document)
    /// See ``DataUpdate/changed(_:_:cleared:)``: the document holds the fields set.
    case changed(DocumentKey, Document, cleared: [String])
    /// See ``DataUpdate/replaced(_:_:)``.
    case replaced(DocumentKey, Document?)
    /// See ``DataUpdate/removed(_:)``.
    case removed(DocumentKey)

    init(_ update: DataUpdate) {
        switch update {
        case .added(let key, let fields): self = .added(key, Document(id: key.documentID, fields: fields))
        case .changed(let key, let fields, let cleared):
            self = .changed(key, Document(id: key.documentID, fields: fields), cleared: cleared)
        case .replaced(let key, let fields):
            self = .replaced(key, fields.map { Document(id: key.documentID, fields: $0) })
        case .removed(let key): self = .removed(key)
        }
    }

    /// The updates in the cache's form, in order; a large batch is packed on two threads (packing is most of an
    /// `added`'s cost, and it reads nothing the cache holds, so it needs no lock: `Database.apply(_:)` runs it before
    /// taking the write lock). A sequence that does not know its length is packed on one thread, with no copy.
    static func packing(_ updates: some Sequence<DataUpdate>) -> [CacheUpdate] {
        guard VersionPreparation.isWorthwhile, updates.underestimatedCount >= VersionPreparation.minimumBatch else {
            return updates.map(CacheUpdate.init)
        }
        let updates = Array(updates)
        return [CacheUpdate](unsafeUninitializedCapacity: updates.count) { buffer, initialized in
            let target = UncheckedSendable(buffer)
            let half = updates.count / 2
            updates.withUnsafeBufferPointer { source in
                let source = UncheckedSendable(source)
                // Each thread initialises its own half of the new array.
                DispatchQueue.concurrentPerform(iterations: 2) { part in
                    let range = part == 0 ? 0..<half : half..<source.value.count
                    for index in range {
                        (target.value.baseAddress! + index).initialize(to: CacheUpdate(source.value[index]))
                    }
                }
            }
            initialized = updates.count
        }
    }

    /// A decoded `added` or `changed`, taken apart (its key, fields and cleared names moved, not copied).
    init(_ message: consuming DocumentMessage) {
        self = message.cacheUpdate()
    }

    /// What a slot an update was moved out of holds until its array lets it go (nothing to release: empty strings).
    static var vacated: CacheUpdate { .removed(DocumentKey(collectionName: "", documentID: "")) }

    /// The document this update is about.
    var key: DocumentKey {
        switch self {
        case .added(let key, _), .changed(let key, _, _), .replaced(let key, _), .removed(let key): return key
        }
    }
}

/// A buffer handed to threads that each use their own part of it.
private struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
