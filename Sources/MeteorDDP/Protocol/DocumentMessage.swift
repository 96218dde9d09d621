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
    let key: DocumentKey
    /// The id as it travelled.
    let wireID: String
    /// The fields the message sets, as a document with the key's id.
    let fields: Document
    /// The fields a `changed` removes (always empty for `added`).
    let cleared: [String]

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
