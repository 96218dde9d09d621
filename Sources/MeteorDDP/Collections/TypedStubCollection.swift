import EJSON

/// A stub's collection whose documents are `Model`s: ``StubCollection`` with encoding and decoding.
///
/// For example:
/// ```swift
/// struct Player: Codable, Sendable { var _id: String?; var name: String; var score: Int }
/// client.defineStub("players.add") { (context, name: String) in
///     try context.collection("players", as: Player.self).insert(Player(name: name, score: 0))
/// }
/// ```
public struct TypedStubCollection<Model: Codable & Sendable>: Sendable {
    /// The same collection, untyped.
    public let untyped: StubCollection

    /// The collection's name.
    public var name: String { untyped.name }

    /// Inserts a model; its id is its encoded `_id` (a string or an ObjectID), or the next id of the invocation's
    /// `/collection/<name>` sequence (the server's id).
    /// - Returns: The id (``Document/id``), or `nil` when a document with that id already exists.
    /// - Throws: `EncodingError`, or ``MethodError`` of kind ``MethodError/Kind/stubFailed`` for a model that does not
    ///   encode as an object.
    @discardableResult
    public func insert(_ model: Model) throws -> String? {
        guard case .object(var fields) = try EJSONEncoder().encode(model) else {
            throw MethodError(
                methodName: untyped.context.methodName, kind: .stubFailed,
                stubErrorDescription: "\(Model.self) does not encode as an object")
        }
        if fields["_id"] == .null { fields.removeValue(forKey: "_id") }
        return try untyped.insert(fields)
    }

    /// Updates the document with `id` with a Mongo modifier; returns 1 if it exists, else 0.
    @discardableResult
    public func update(_ id: String, _ modifier: EJSONValue) throws -> Int {
        try untyped.update(id, modifier)
    }

    /// Updates the document with this ObjectID; returns 1 if it exists, else 0.
    @discardableResult
    public func update(_ id: ObjectID, _ modifier: EJSONValue) throws -> Int {
        try untyped.update(id, modifier)
    }

    /// Removes the document with `id`; returns 1 if it existed, else 0.
    @discardableResult
    public func remove(_ id: String) -> Int {
        untyped.remove(id)
    }

    /// Removes the document with this ObjectID; returns 1 if it existed, else 0.
    @discardableResult
    public func remove(_ id: ObjectID) -> Int {
        untyped.remove(id)
    }

    /// The document with `id` as the stub sees it, decoded.
    /// - Throws: `DecodingError` for a document that does not decode as `Model`.
    public func document(id: String) throws -> Model? {
        try untyped.document(id: id).map { try EJSONDecoder().decode(Model.self, from: $0.ejsonValue) }
    }

    /// The document with this ObjectID as the stub sees it, decoded.
    public func document(id: ObjectID) throws -> Model? {
        try document(id: id.hexString)
    }
}
