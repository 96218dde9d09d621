import EJSON

/// Writes to the local cache as Meteor's collection methods do them in a stub: insert (refusing an existing id),
/// update by id with a Mongo modifier, remove by id. Used by the built-in `/<collection>/…` stubs and by stubs
/// through ``MethodInvocationContext/collection(_:)``.
enum LocalWrites {
    /// Inserts `document` (with its `_id`); returns the id, or `nil` when a document with that id exists.
    static func insert(_ document: EJSONObject, id: String, into collection: String, database: Database) -> String? {
        let key = DocumentKey(collectionName: collection, documentID: id)
        guard database.document(key) == nil else { return nil }
        var fields = document
        fields.removeValue(forKey: "_id")
        database.apply(.added(key, fields))
        return id
    }

    /// Applies `modifier` to the document with `id`; returns how many documents changed (0 or 1).
    static func update(id: String, with modifier: MongoModifier, in collection: String, database: Database) throws -> Int {
        let key = DocumentKey(collectionName: collection, documentID: id)
        guard let current = database.document(key) else { return 0 }
        database.apply(.replaced(key, try modifier.applyKeepingID(id, to: current.fields)))
        return 1
    }

    /// Meteor's `update(selector, modifier, {multi, upsert, insertedId})` on the local cache: the first matching
    /// document (every one with `multi`), or an inserted one when none matches and `upsert` is set. Returns how many
    /// documents were changed or inserted.
    static func update(selector: EJSONValue, modifier: MongoModifier, options: EJSONObject, newID: () -> String,
                       in collection: String, database: Database) throws -> Int {
        let selector = try MongoSelector(selector)
        let multi = options["multi"]?.isTruthy ?? false
        let matching: [Document]
        if let id = MongoModifier.documentID(inSelector: selector.selector) {
            matching = database.document(DocumentKey(collectionName: collection, documentID: id)).map { [$0] } ?? []
        } else {
            // Every match is needed either way: minimongo's first is the first in arrival order.
            let all = database.snapshot.allDocuments(in: collection).filter { selector.matches($0) }
            matching = multi ? all : all.min { $0.arrivedBefore($1) }.map { [$0] } ?? []
        }
        for document in matching {
            var fields = document.fields
            fields["_id"] = MongoID.parse(document.id) ?? .string(document.id)
            let indices = selector.arrayIndices(in: fields)
            let updated = try modifier.applyKeepingID(document.id, to: document.fields, arrayIndices: indices)
            database.apply(.replaced(DocumentKey(collectionName: collection, documentID: document.id), updated))
        }
        guard matching.isEmpty, options["upsert"]?.isTruthy == true else { return matching.count }
        var inserted = try selector.upsertDocument(applying: modifier)
        let id = inserted["_id"]?.stringValue ?? options["insertedId"]?.stringValue ?? newID()
        inserted["_id"] = .string(id)
        return insert(inserted, id: id, into: collection, database: database) == nil ? 0 : 1
    }

    /// Meteor's `remove(selector)` on the local cache; returns how many documents were removed.
    static func remove(selector: EJSONValue, from collection: String, database: Database) throws -> Int {
        if let id = MongoModifier.documentID(inSelector: selector) { return remove(id: id, from: collection, database: database) }
        let selector = try MongoSelector(selector)
        let matching = database.snapshot.allDocuments(in: collection).filter { selector.matches($0) }
        for document in matching { database.apply(.removed(DocumentKey(collectionName: collection, documentID: document.id))) }
        return matching.count
    }

    /// Removes the document with `id`; returns how many documents were removed (0 or 1).
    static func remove(id: String, from collection: String, database: Database) -> Int {
        let key = DocumentKey(collectionName: collection, documentID: id)
        guard database.document(key) != nil else { return 0 }
        database.apply(.removed(key))
        return 1
    }

}

/// What a stub writes through: the local cache inside the stub's transaction, with ids from the invocation's
/// `/collection/<name>` random sequence so they equal the ids the server makes.
public struct StubCollection: Sendable {
    /// The collection's name.
    public let name: String
    let context: MethodInvocationContext
    let database: Database

    /// Inserts a document; its id is `fields["_id"]` or the next id of the invocation's `/collection/<name>` sequence.
    /// - Returns: The id, or `nil` when a document with that id already exists.
    @discardableResult
    public func insert(_ fields: EJSONObject) -> String? {
        let id = fields["_id"]?.stringValue ?? context.randomID(forSequence: "/collection/" + name)
        return LocalWrites.insert(fields, id: id, into: name, database: database)
    }

    /// Updates the document with `id` with a Mongo modifier; returns 1 if it exists, else 0.
    @discardableResult
    public func update(_ id: String, _ modifier: EJSONValue) throws -> Int {
        try LocalWrites.update(id: id, with: MongoModifier(modifier), in: name, database: database)
    }

    /// Updates the documents matching a Mongo selector (a stub is trusted code: any selector), as Meteor's
    /// `update(selector, modifier, options)`: the first match, every match with `multi`, an insert with `upsert`.
    @discardableResult
    public func update(_ selector: EJSONValue, _ modifier: EJSONValue, options: UpdateOptions = UpdateOptions()) throws -> Int {
        try LocalWrites.update(selector: selector, modifier: MongoModifier(modifier), options: options.ejsonValue,
                               newID: { context.randomID(forSequence: "/collection/" + name) }, in: name, database: database)
    }

    /// Removes the document with `id`; returns 1 if it existed, else 0.
    @discardableResult
    public func remove(_ id: String) -> Int {
        LocalWrites.remove(id: id, from: name, database: database)
    }

    /// Removes the documents matching a Mongo selector; returns how many.
    @discardableResult
    public func remove(matching selector: EJSONValue) throws -> Int {
        try LocalWrites.remove(selector: selector, from: name, database: database)
    }

    /// The document with `id` as the stub sees it (including the stub's own writes).
    public func document(id: String) -> Document? {
        database.document(DocumentKey(collectionName: name, documentID: id))
    }
}

extension MethodInvocationContext {
    /// The collection named `name` as this stub writes it.
    public func collection(_ name: String) -> StubCollection {
        StubCollection(name: name, context: self, database: client?.database ?? Database())
    }
}
