import EJSON

/// Writes to the local cache as Meteor's collection methods do them in a stub: insert (refusing an existing id),
/// update by id with a Mongo modifier, remove by id. Used by the built-in `/<collection>/…` stubs and by stubs
/// through ``MethodInvocationContext/collection(_:)``.
enum LocalWrites {
    /// Inserts `document` with the `_id` `id` (a string, an ObjectID, …), keyed as DDP carries it
    /// (`MongoID.documentID`); returns the id, or `nil` when a document with that id exists.
    static func insert(_ document: EJSONObject, id: EJSONValue, into collection: String, database: Database)
        throws(QueryError) -> EJSONValue?
    {
        // minimongo's `prepareInsert` (`assertHasValidFieldNames`): no `$` first, no key with a dot at either end or
        // two dots in a row, no null byte, at any depth.
        try MongoModifier.assertValidFieldNames(.object(document))
        let key = DocumentKey(collectionName: collection, documentID: MongoID.documentID(id))
        guard database.document(key) == nil else { return nil }
        var fields = document
        fields.removeValue(forKey: "_id")
        database.apply(.added(key, fields))
        return id
    }

    /// Applies `modifier` to the document with `id` (``Document/id``); returns how many documents changed (0 or 1).
    static func update(id: String, with modifier: MongoModifier, in collection: String, database: Database) throws
        -> Int
    {
        let key = DocumentKey(collectionName: collection, documentID: id)
        guard let current = database.document(key) else { return 0 }
        database.apply(.replaced(key, try modifier.applyKeepingID(id, to: current.fields)))
        return 1
    }

    /// Meteor's `update(selector, modifier, {multi, upsert, insertedId})` on the local cache: the first matching
    /// document in minimongo's order (every one with `multi`), or an inserted one when none matches and `upsert` is
    /// set. Returns how many documents were changed or inserted.
    ///
    /// The order is minimongo's `_eachPossiblyMatchingDoc`: the ids the selector names (`_id`, `{_id: {$in: […]}}`,
    /// a clause of a top-level `$and`) in the order it names them, else every document in arrival order.
    static func update(
        selector: EJSONValue, modifier: MongoModifier, options: EJSONObject, newID: () -> EJSONValue,
        in collection: String, database: Database
    ) throws -> Int {
        try upsert(
            selector: selector, modifier: modifier, options: options, newID: newID, in: collection, database: database
        ).numberAffected
    }

    /// ``update(selector:modifier:options:newID:in:database:)`` with the inserted document's `_id`, if it inserted
    /// one (minimongo's `{numberAffected, insertedId}`, Meteor 3.3.2+).
    static func upsert(
        selector: EJSONValue, modifier: MongoModifier, options: EJSONObject, newID: () -> EJSONValue,
        in collection: String, database: Database
    ) throws -> (numberAffected: Int, insertedID: EJSONValue?) {
        let compiled = try MongoSelector(selector)
        let multi = options["multi"]?.isTruthy ?? false
        var matching: [Document] = []
        if let ids = specificIDs(in: selector) {
            var seen: Set<String> = []
            for id in ids.map(MongoID.documentID) where seen.insert(id).inserted {
                guard let document = database.document(DocumentKey(collectionName: collection, documentID: id)),
                    compiled.matches(document)
                else { continue }
                matching.append(document)
                if !multi { break }
            }
        } else {
            // Every match is needed either way: minimongo's first is the first in arrival order.
            matching = database.snapshot.allDocuments(in: collection).filter { compiled.matches($0) }
            if !multi { matching = matching.min { $0.arrivedBefore($1) }.map { [$0] } ?? [] }
        }
        for document in matching {
            var fields = document.fields
            fields["_id"] = document.idValue
            let indices = compiled.arrayIndices(in: fields)
            let updated = try modifier.applyKeepingID(document.id, to: document.fields, arrayIndices: indices)
            database.apply(.replaced(DocumentKey(collectionName: collection, documentID: document.id), updated))
        }
        guard matching.isEmpty, options["upsert"]?.isTruthy == true else { return (matching.count, nil) }
        var inserted = try compiled.upsertDocument(applying: modifier)
        // minimongo's _createUpsertDocument keeps the selector's _id if it is truthy (an ObjectID stays one).
        let id = inserted["_id"].flatMap { $0.isTruthy ? $0 : nil } ?? options["insertedId"] ?? newID()
        inserted["_id"] = id
        return try insert(inserted, id: id, into: collection, database: database) == nil ? (0, nil) : (1, id)
    }

    /// The ids a selector restricts its documents to, in its order (minimongo's `_idsMatchedBySelector`), or `nil`.
    static func specificIDs(in selector: EJSONValue) -> [EJSONValue]? {
        if MongoID.isID(selector) { return [selector] }
        guard case .object(let object) = selector else { return nil }
        if let id = object["_id"] {
            if MongoID.isID(id) { return [id] }
            if case .array(let ids)? = id.objectValue?["$in"], !ids.isEmpty, ids.allSatisfy(MongoID.isID) { return ids }
            return nil
        }
        if case .array(let clauses)? = object["$and"] {
            for clause in clauses {
                if let ids = specificIDs(in: clause) { return ids }
            }
        }
        return nil
    }

    /// Meteor's `remove(selector)` on the local cache; returns how many documents were removed.
    static func remove(selector: EJSONValue, from collection: String, database: Database) throws -> Int {
        let compiled = try MongoSelector(selector)
        let candidates: [Document]
        if let ids = specificIDs(in: selector) {
            candidates = Set(ids.map(MongoID.documentID)).compactMap {
                database.document(DocumentKey(collectionName: collection, documentID: $0))
            }
        } else {
            candidates = database.snapshot.allDocuments(in: collection)
        }
        let matching = candidates.filter { compiled.matches($0) }
        for document in matching {
            database.apply(.removed(DocumentKey(collectionName: collection, documentID: document.id)))
        }
        return matching.count
    }

    /// Removes the document with `id` (``Document/id``); returns how many documents were removed (0 or 1).
    static func remove(id: String, from collection: String, database: Database) -> Int {
        let key = DocumentKey(collectionName: collection, documentID: id)
        guard database.document(key) != nil else { return 0 }
        database.apply(.removed(key))
        return 1
    }
}
