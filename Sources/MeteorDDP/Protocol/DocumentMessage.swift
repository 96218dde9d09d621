import EJSON

/// An `added` or `changed` message whose fields were decoded straight from the frame's bytes into the cache's packed
/// form by ``DocumentMessageDecoder``: no `EJSONValue` tree is built, and an `added` for a new document puts this very
/// document into the cache.
struct DocumentMessage: Sendable {
    enum Kind: Sendable {
        case added, changed
    }

    let kind: Kind
    /// The document's key: its collection and the id the wire id stands for.
    private(set) var key: DocumentKey
    /// The id as it travelled, when it is not the key's (a string id escaped with `-`).
    private let escapedWireID: String?
    /// The fields the message sets, as a document with the key's id.
    let fields: Document
    /// The fields a `changed` removes (always empty for `added`).
    private(set) var cleared: [String]

    /// `escapedWireID`: the id as it travelled if it is not the key's, else `nil`.
    init(kind: Kind, key: DocumentKey, escapedWireID: String?, fields: Document, cleared: [String]) {
        self.kind = kind
        self.key = key
        self.escapedWireID = escapedWireID
        self.fields = fields
        self.cleared = cleared
    }

    /// An `added` or `changed` the general parser read (`nil` for any other message).
    init?(_ message: ServerMessage) {
        switch message {
        case .added(let collection, let id, let fields):
            let key = DocumentKey(collectionName: collection, documentID: MongoID.documentID(fromWire: id))
            self.init(
                kind: .added, key: key, wireID: id, fields: Document(id: key.documentID, fields: fields), cleared: [])
        case .changed(let collection, let id, let fields, let cleared):
            let key = DocumentKey(collectionName: collection, documentID: MongoID.documentID(fromWire: id))
            self.init(
                kind: .changed, key: key, wireID: id, fields: Document(id: key.documentID, fields: fields),
                cleared: cleared)
        default: return nil
        }
    }

    init(kind: Kind, key: DocumentKey, wireID: String, fields: Document, cleared: [String]) {
        self.init(
            kind: kind, key: key, escapedWireID: wireID == key.documentID ? nil : wireID, fields: fields,
            cleared: cleared)
    }

    /// The id as it travelled.
    var wireID: String { escapedWireID ?? key.documentID }

    /// The message as an update of the cache, its key, fields and cleared names moved into it. (Taking the stored
    /// properties of a copyable struct that is consumed anyway copies each one, then releases the originals with the
    /// struct: ~10 reference count operations a frame. Swapped out for values that hold nothing, they move.)
    consuming func cacheUpdate() -> CacheUpdate {
        var key = DocumentKey(collectionName: "", documentID: "")
        swap(&key, &self.key)
        switch kind {
        case .added:
            return .added(key, fields)
        case .changed:
            var cleared: [String] = []
            swap(&cleared, &self.cleared)
            return .changed(key, fields, cleared: cleared)
        }
    }

    /// The same message as the general parser reads it (for reports, held messages' diagnostics and tests).
    var serverMessage: ServerMessage {
        switch kind {
        case .added: .added(collection: key.collectionName, id: wireID, fields: fields.fields)
        case .changed: .changed(collection: key.collectionName, id: wireID, fields: fields.fields, cleared: cleared)
        }
    }
}

/// A server message as the client's queue receives it: `added` and `changed` frames that took the fast path
/// (``DocumentMessageDecoder``) arrive packed, every other frame as a ``ServerMessage``.
enum IncomingMessage: Sendable {
    case message(ServerMessage)
    case document(DocumentMessage)

    /// The `msg` field.
    var name: String {
        switch self {
        case .message(let message): message.name
        case .document(let message): message.kind == .added ? "added" : "changed"
        }
    }

    /// The message as the general parser reads it.
    var serverMessage: ServerMessage {
        switch self {
        case .message(let message): message
        case .document(let message): message.serverMessage
        }
    }
}
