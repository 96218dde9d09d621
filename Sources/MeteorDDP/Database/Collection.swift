import EJSON

/// A read view of one collection of a ``Database``.
///
/// For example:
/// ```swift
/// let players = database.collection("players")
/// let top = players.find(Query(sort: [.descending("score")], limit: 3))
/// ```
///
/// ## Concurrency
/// Reads may run on any thread at any time; each read sees one committed snapshot (**Snapshot Reads**).
public struct Collection: Sendable {
    /// The collection's name.
    public let name: String
    let database: Database

    /// The document with this id, if present.
    public func document(id: String) -> Document? {
        database.document(DocumentKey(collectionName: name, documentID: id))
    }

    /// Every document, in no particular order.
    public var documents: [Document] {
        database.snapshot.allDocuments(in: name)
    }

    /// How many documents there are.
    public var count: Int {
        database.snapshot.documentCount(in: name)
    }

    /// The documents matching a query, sorted and limited as it says.
    public func find(_ query: Query) -> [Document] {
        query.evaluate(database.snapshot.allDocuments(in: name))
    }

    /// Observes a query: an initial snapshot, then a new one with a diff after every transaction that changes the
    /// result.
    public func observe(_ query: Query = Query()) -> LiveQuery {
        LiveQuery(collection: name, query: query, database: database)
    }
}
