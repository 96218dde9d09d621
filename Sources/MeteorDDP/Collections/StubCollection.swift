import EJSON

/// What a stub writes through: the local cache inside the stub's transaction, with ids from the invocation's
/// `/collection/<name>` random sequence so they equal the ids the server makes (strings or `ObjectID`s, as the
/// collection was declared: ``DDPClient/collection(_:idGeneration:)``).
///
/// Ids given as `String` are ``Document/id``s, the form DDP carries (an ObjectID's 24 hex digits); the `ObjectID`
/// overloads take the ObjectID itself.
public struct StubCollection: Sendable {
    /// The collection's name.
    public let name: String
    let context: MethodInvocationContext
    let database: Database
    /// How the collection makes new ids.
    public let idGeneration: IDGeneration

    /// Inserts a document; its id is `fields["_id"]` (a string or an ObjectID) or the next id of the invocation's
    /// `/collection/<name>` sequence.
    /// - Returns: The id (``Document/id``), or `nil` when a document with that id already exists.
    /// - Throws: ``QueryError`` for a field name minimongo refuses (`$x`, `.a`, `a.`, `a..b`, a null byte), as its
    ///   `insert` throws.
    @discardableResult
    public func insert(_ fields: EJSONObject) throws -> String? {
        let id = MongoID.givenID(of: fields) ?? idGeneration.newID(in: context, collection: name)
        return try LocalWrites.insert(fields, id: id, into: name, database: database).map(MongoID.documentID)
    }

    /// Updates the document with `id` with a Mongo modifier; returns 1 if it exists, else 0.
    @discardableResult
    public func update(_ id: String, _ modifier: EJSONValue) throws -> Int {
        try LocalWrites.update(id: id, with: MongoModifier(modifier), in: name, database: database)
    }

    /// Updates the document with this ObjectID; returns 1 if it exists, else 0.
    @discardableResult
    public func update(_ id: ObjectID, _ modifier: EJSONValue) throws -> Int {
        try update(id.hexString, modifier)
    }

    /// Updates the documents matching a Mongo selector (a stub is trusted code: any selector), as Meteor's
    /// `update(selector, modifier, options)`: the first match in minimongo's order, every match with `multi`, an
    /// insert with `upsert` (its id from the selector's `_id`, `insertedID`, or the invocation's sequence).
    @discardableResult
    public func update(_ selector: EJSONValue, _ modifier: EJSONValue, options: UpdateOptions = UpdateOptions()) throws
        -> Int
    {
        try LocalWrites.update(
            selector: selector, modifier: MongoModifier(modifier), options: options.ejsonValue,
            newID: { idGeneration.newID(in: context, collection: name) }, in: name, database: database)
    }

    /// Updates the documents matching a Mongo selector or, when none does, inserts one (minimongo's `upsert`): the
    /// inserted document's id comes from the selector's `_id`, `insertedID`, or the invocation's sequence.
    ///
    /// - Returns: How many documents changed or were inserted, and the inserted id (Meteor 3.3.2+).
    @discardableResult
    public func upsert(_ selector: EJSONValue, _ modifier: EJSONValue, options: UpdateOptions = UpdateOptions())
        throws -> UpsertResult
    {
        var options = options
        options.upsert = true
        let (count, insertedID) = try LocalWrites.upsert(
            selector: selector, modifier: MongoModifier(modifier), options: options.ejsonValue,
            newID: { idGeneration.newID(in: context, collection: name) }, in: name, database: database)
        return UpsertResult(numberAffected: count, insertedID: insertedID.map(MongoID.documentID))
    }

    /// Removes the document with `id`; returns 1 if it existed, else 0.
    @discardableResult
    public func remove(_ id: String) -> Int {
        LocalWrites.remove(id: id, from: name, database: database)
    }

    /// Removes the document with this ObjectID; returns 1 if it existed, else 0.
    @discardableResult
    public func remove(_ id: ObjectID) -> Int {
        remove(id.hexString)
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

    /// The document with this ObjectID as the stub sees it.
    public func document(id: ObjectID) -> Document? {
        document(id: id.hexString)
    }
}

extension MethodInvocationContext {
    /// The collection named `name` as this stub writes it.
    public func collection(_ name: String) -> StubCollection {
        StubCollection(
            name: name, context: self, database: client?.database ?? Database(),
            idGeneration: client?.idGeneration(ofCollection: name) ?? .string)
    }

    /// The collection named `name` as this stub writes it, its documents `Model`s.
    public func collection<Model: Codable & Sendable>(_ name: String, as model: Model.Type) -> TypedStubCollection<
        Model
    > {
        TypedStubCollection(untyped: collection(name))
    }
}
