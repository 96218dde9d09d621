import EJSON

extension LocalCollection {
    /// Every document decoded as `T` (the document's id is the field `_id`).
    ///
    /// For example:
    /// ```swift
    /// struct Player: Decodable { var _id: String; var name: String; var score: Int }
    /// let players = try database.collection("players").documents(as: Player.self)
    /// ```
    /// - Throws: `DecodingError` for the first document that does not decode.
    public func documents<T: Decodable>(as type: T.Type) throws -> [T] {
        let decoder = EJSONDecoder()
        return try documents.map { try decoder.decode(type, from: $0.ejsonValue) }
    }

    /// The document with `id` decoded as `T`, if present.
    public func document<T: Decodable>(id: String, as type: T.Type) throws -> T? {
        try document(id: id).map { try EJSONDecoder().decode(type, from: $0.ejsonValue) }
    }
}

extension DDPCollection {
    /// Every document decoded as `T` (the document's id is the field `_id`).
    public func documents<T: Decodable>(as type: T.Type) throws -> [T] {
        try client.database.collection(name).documents(as: type)
    }

    /// The document with `id` decoded as `T`, if present.
    public func document<T: Decodable>(id: String, as type: T.Type) throws -> T? {
        try client.database.collection(name).document(id: id, as: type)
    }

    /// Inserts an `Encodable` value (its `_id`, if it encodes one, is used).
    @discardableResult
    public func insert<T: Encodable>(_ value: T) async throws -> String {
        try await insert(encodedFields(value, method: "insert"))
    }

    /// `value` encoded as a document's fields; a value that does not encode as an object fails the call `method`
    /// before anything is sent.
    func encodedFields<T: Encodable>(_ value: T, method: String) throws -> EJSONObject {
        guard case .object(let fields) = try EJSONEncoder().encode(value) else {
            throw MethodError(
                methodName: "/\(name)/\(method)", kind: .stubFailed,
                stubErrorDescription: "\(T.self) does not encode as an object")
        }
        return fields
    }
}
