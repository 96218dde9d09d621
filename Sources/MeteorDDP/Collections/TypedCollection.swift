import EJSON

/// A collection whose documents are `Model`s: reads decode, writes encode, queries take Mongo selectors.
///
/// For example:
/// ```swift
/// struct Todo: Codable, Sendable { var _id: String?; var listId: String; var text: String; var checked = false }
/// let todos = client.collection("todos", as: Todo.self)
/// let open = try todos.find(["listId": "list1", "checked": ["$ne": true]], FindOptions(sort: ["createdAt": 1]))
/// let id = try await todos.insert(Todo(_id: nil, listId: "list1", text: "milk"))
/// ```
///
/// A document's `_id` is its `_id` field when decoding; a model may leave it out. Reads throw `DecodingError` for a
/// document that does not decode as `Model`.
public struct TypedCollection<Model: Codable & Sendable>: Sendable {
    /// The same collection, untyped.
    public let untyped: DDPCollection

    /// The collection's name.
    public var name: String { untyped.name }

    /// The document with `id`, decoded.
    public func document(id: String) throws -> Model? {
        try untyped.document(id: id).map(Self.decode)
    }

    /// The documents matching a Mongo selector, decoded (Meteor's `find(selector, options).fetch()`).
    public func find(_ selector: EJSONValue = [:], _ options: FindOptions = FindOptions()) throws -> [Model] {
        try untyped.find(selector, options).map(Self.decode)
    }

    /// The first document matching a Mongo selector, decoded (Meteor's `findOne`).
    public func findOne(_ selector: EJSONValue = [:], _ options: FindOptions = FindOptions()) throws -> Model? {
        try untyped.findOne(selector, options).map(Self.decode)
    }

    /// How many documents `find(selector, options)` gives (nothing is decoded).
    public func count(_ selector: EJSONValue = [:], _ options: FindOptions = FindOptions()) throws(QueryError) -> Int {
        try untyped.count(selector, options)
    }

    /// A live query whose snapshots hold decoded values; a change to one document decodes that document only.
    public func observe(_ selector: EJSONValue = [:], _ options: FindOptions = FindOptions()) throws(QueryError)
        -> TypedLiveQuery<Model>
    {
        TypedLiveQuery(try untyped.observe(selector, options))
    }

    /// Inserts a model: in the cache at once (the stub), then on the server. Its `_id`, if it encodes one, is used.
    ///
    /// - Returns: The document's id, once the server confirmed the insert and its data is visible.
    @discardableResult
    public func insert(_ model: Model) async throws -> String {
        try await untyped.insert(model)
    }

    /// Updates the document with `id` with a Mongo modifier; returns how many documents the server changed.
    @discardableResult
    public func update(_ id: String, _ modifier: EJSONValue, options: UpdateOptions = UpdateOptions()) async throws
        -> Int
    {
        try await untyped.update(id, modifier, options: options)
    }

    /// Replaces the document with `model`'s fields (Meteor's update with a replacement document).
    ///
    /// Meteor refuses a replacement from client code in a collection with allow/deny rules (only modifiers are
    /// checked against them): the server answers 403, this throws its ``MeteorError``, and the local replacement is
    /// rolled back to the server's version. Update with `$set` there instead.
    @discardableResult
    public func replace(_ id: String, with model: Model) async throws -> Int {
        var fields = try untyped.encodedFields(model, method: "update")
        fields.removeValue(forKey: "_id")
        return try await untyped.update(id, .object(fields))
    }

    /// Removes the document with `id`; returns how many documents the server removed.
    @discardableResult
    public func remove(_ id: String) async throws -> Int {
        try await untyped.remove(id)
    }

    /// Updates the document with this ObjectID with a Mongo modifier; returns how many documents the server changed.
    @discardableResult
    public func update(_ id: ObjectID, _ modifier: EJSONValue, options: UpdateOptions = UpdateOptions()) async throws
        -> Int
    {
        try await untyped.update(id, modifier, options: options)
    }

    /// Replaces the document with this ObjectID with `model`'s fields (refused with 403 in a collection with
    /// allow/deny rules, as the replace by string id says).
    @discardableResult
    public func replace(_ id: ObjectID, with model: Model) async throws -> Int {
        try await replace(id.hexString, with: model)
    }

    /// Removes the document with this ObjectID; returns how many documents the server removed.
    @discardableResult
    public func remove(_ id: ObjectID) async throws -> Int {
        try await untyped.remove(id)
    }

    static func decode(_ document: Document) throws -> Model {
        try EJSONDecoder().decode(Model.self, from: document.ejsonValue)
    }
}

extension DDPClient {
    /// The collection named `name` with its documents as `Model`s (and Meteor's built-in stubs defined, as
    /// ``collection(_:idGeneration:)``).
    ///
    /// - Parameters:
    ///   - name: The collection's name, as the server publishes it.
    ///   - model: The type its documents decode as.
    ///   - idGeneration: How inserts make ids (see ``collection(_:idGeneration:)``); a model of an `.objectID`
    ///     collection declares `var _id: ObjectID`.
    public func collection<Model: Codable & Sendable>(
        _ name: String, as model: Model.Type, idGeneration: IDGeneration? = nil
    ) -> TypedCollection<Model> {
        TypedCollection(untyped: collection(name, idGeneration: idGeneration))
    }
}
