import EJSON

/// The local cache of one collection (minimongo's `LocalCollection`): a read view of one collection of a ``Database``.
/// Apps use ``DDPCollection`` (`client.collection(_:)`), which reads through it and writes through methods.
///
/// For example:
/// ```swift
/// let players = database.collection("players")
/// let top = players.find(Query(sort: [.descending("score")], limit: 3))
/// ```
///
/// ## Concurrency
/// Reads may run on any thread at any time; each read sees one committed snapshot (**Snapshot Reads**).
public struct LocalCollection: Sendable {
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

    /// The documents matching a query, with what they say about pending writes and the offline store, both read from
    /// one snapshot.
    public func findWithMetadata(_ query: Query) -> (documents: [Document], metadata: ResultMetadata) {
        let snapshot = database.snapshot
        let documents = query.evaluate(snapshot.allDocuments(in: name))
        return (documents, snapshot.metadata.result(collection: name, documents: documents))
    }

    /// Whether the document with this id holds local writes the server has not confirmed yet (a pending call's stub
    /// wrote it).
    public func hasPendingWrites(id: String) -> Bool {
        database.metadata.hasPendingWrites(DocumentKey(collectionName: name, documentID: id))
    }

    /// Observes a query: an initial snapshot, then a new one with a diff after every transaction that changes the
    /// result.
    public func observe(_ query: Query = Query()) -> LiveQuery {
        LiveQuery(collection: name, query: query, database: database)
    }

    // MARK: - Mongo selectors

    /// The documents matching a Mongo selector, sorted, skipped and limited as `options` say (Meteor's
    /// `collection.find(selector, options).fetch()`).
    ///
    /// - Throws: ``QueryError`` for a selector or sort minimongo would refuse.
    public func find(_ selector: EJSONValue = [:], _ options: FindOptions = FindOptions()) throws(QueryError)
        -> [Document]
    {
        if options.collation == nil, let id = MongoID.id(namedBy: selector) { return try find(id: id, options) }
        return find(try Query(selector, options))
    }

    /// minimongo's fast path for a selector that is an id (`"x"`, `{_id: x}`, falsy ids such as `0` and `""`
    /// included): the document with that id, without the matcher or a sort; a `skip` other than 0 leaves nothing and
    /// `limit` is not looked at.
    private func find(id: EJSONValue, _ options: FindOptions) throws(QueryError) -> [Document] {
        let fields = try options.fields.map { fields throws(QueryError) in try MongoProjection(fields) }
        guard options.skip == 0, let document = document(id: MongoID.documentID(id)) else { return [] }
        return [fields?.apply(document) ?? document]
    }

    /// The first document matching a Mongo selector in the order `options` give (Meteor's `findOne`).
    public func findOne(_ selector: EJSONValue = [:], _ options: FindOptions = FindOptions()) throws(QueryError)
        -> Document?
    {
        var options = options
        options.limit = 1
        return try find(selector, options).first
    }

    /// How many documents `find(selector, options)` gives (Meteor's `find(selector, options).count()`): `skip` and
    /// `limit` count, and a collation decides which strings are equal.
    public func count(_ selector: EJSONValue, _ options: FindOptions = FindOptions()) throws(QueryError) -> Int {
        if options.collation == nil, let id = MongoID.id(namedBy: selector) {
            return try find(id: id, options).count
        }
        let query = try Query(selector, options)
        let matching = database.snapshot.allDocuments(in: name).lazy.filter { query.matches($0) }.count
        return query.window(count: matching).count
    }

    /// Observes the documents matching a Mongo selector, sorted and windowed as `options` say.
    public func observe(_ selector: EJSONValue, _ options: FindOptions = FindOptions()) throws(QueryError) -> LiveQuery
    {
        observe(try Query(selector, options))
    }
}
