import EJSON

// MARK: - Typed method calls

extension DDPClient {
    /// Calls a method with `Encodable` parameters and decodes its result.
    ///
    /// For example:
    /// ```swift
    /// let id = try await client.call("todos.insert", todo, returning: String.self)
    /// ```
    /// - Throws: the server's ``MeteorError`` (``MeteorError/details(as:)`` decodes its details), ``MethodError`` for a
    ///   local failure, an `EncodingError`
    ///   for parameters that do not encode, a `DecodingError` for a result that does not decode (a method that
    ///   returns nothing decodes as `nil` into an optional), or `CancellationError`.
    public func call<Result: Decodable>(
        _ name: String,
        _ params: any Encodable...,
        returning type: Result.Type = Result.self,
        options: MethodOptions = MethodOptions()
    ) async throws -> Result {
        let encoder = EJSONEncoder()
        let encoded = try params.map { try encoder.encode($0) }
        let value = try await call(name, params: encoded, options: options)
        return try EJSONDecoder().decode(Result.self, from: value ?? .null)
    }
}

extension MeteorError {
    /// The error's `details` decoded as `T` (`nil` when it has none).
    public func details<T: Decodable>(as type: T.Type) throws -> T? {
        guard let details else { return nil }
        return try EJSONDecoder().decode(type, from: details)
    }
}
