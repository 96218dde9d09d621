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
        case .changed(let key, let fields, let cleared): self = .changed(key, Document(id: key.documentID, fields: fields), cleared: cleared)
        case .replaced(let key, let fields): self = .replaced(key, fields.map { Document(id: key.documentID, fields: $0) })
        case .removed(let key): self = .removed(key)
        }
    }

    /// A decoded `added` or `changed`, taken apart (its key, fields and cleared names moved, not copied).
    init(_ message: consuming DocumentMessage) {
        switch message.kind {
        case .added: self = .added(message.key, message.fields)
        case .changed: self = .changed(message.key, message.fields, cleared: message.cleared)
        }
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
