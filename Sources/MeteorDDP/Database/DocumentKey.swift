/// Identifies a document: its collection and its id.
///
/// For example:
/// ```swift
/// let key = DocumentKey(collectionName: "players", documentID: "lovelace")
/// ```
public struct DocumentKey: Hashable, Sendable, CustomStringConvertible {
    /// The collection's name.
    public let collectionName: String
    /// The document's id (its `_id`).
    public let documentID: String

    /// Creates a key.
    public init(collectionName: String, documentID: String) {
        self.collectionName = collectionName
        self.documentID = documentID
    }

    public var description: String { "\(collectionName)/\(documentID)" }
}
