import EJSON

/// A document of the local cache: an immutable value, its id and its fields (without `_id`).
///
/// For example:
/// ```swift
/// if let player = client.database.document(DocumentKey(collectionName: "players", documentID: "lovelace")) {
///     print(player["name"]?.stringValue ?? "")
/// }
/// ```
public struct Document: Sendable, Equatable, Identifiable {
    /// One reference for the id and the fields: copying a document (the cache's trees copy many when they change)
    /// costs a single retain.
    private final class Storage: Sendable {
        let id: String
        let fields: EJSONObject

        init(id: String, fields: EJSONObject) {
            self.id = id
            self.fields = fields
        }
    }

    private let storage: Storage

    /// The document's id.
    public var id: String { storage.id }
    /// The document's fields, in the order the server sent them.
    public var fields: EJSONObject { storage.fields }

    /// Creates a document.
    public init(id: String, fields: EJSONObject) {
        self.storage = Storage(id: id, fields: fields)
    }

    /// The field named `name`.
    public subscript(name: String) -> EJSONValue? { fields[name] }

    /// The value at a dotted path (`"location.city"`).
    public func value(at path: String) -> EJSONValue? {
        if path == "_id" { return .string(id) }
        var current: EJSONValue? = .object(fields)
        for component in path.split(separator: ".", omittingEmptySubsequences: false) {
            current = current?[String(component)]
        }
        return current
    }

    /// The document as one EJSON object with `_id` first (for Codable decoding and the wire).
    public var ejsonValue: EJSONValue {
        var object = EJSONObject(minimumCapacity: fields.count + 1)
        object["_id"] = .string(id)
        for (name, value) in fields where name != "_id" { object[name] = value }
        return .object(object)
    }

    public static func == (lhs: Document, rhs: Document) -> Bool {
        lhs.storage === rhs.storage || (lhs.id == rhs.id && EJSONValue.object(lhs.fields) == EJSONValue.object(rhs.fields))
    }
}
