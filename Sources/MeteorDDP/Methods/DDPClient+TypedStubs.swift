import EJSON

// MARK: - Stubs with typed parameters

extension DDPClient {
    /// Defines (or replaces) the stub of a method, its parameters decoded as the closure's types.
    ///
    /// For example:
    /// ```swift
    /// struct Player: Codable, Sendable { var _id: String?; var name: String; var score: Int }
    /// client.defineStub("players.add") { (context, name: String, score: Int?) in
    ///     try context.collection("players", as: Player.self).insert(Player(name: name, score: score ?? 0))
    /// }
    /// ```
    /// A parameter the call did not pass decodes as `null` (`nil` for an optional type). One that is missing or does
    /// not decode stops the stub before it runs with a ``MethodParameterError``; as any stub's error it is logged and
    /// the call still goes to the server, which decides (with ``MethodOptions/throwStubExceptions``, the caller gets
    /// it). Nothing is returned to ``MethodOptions/returnStubValue`` or ``MethodCall/stubValue``.
    public func defineStub<each Parameter: Decodable & SendableMetatype>(
        _ name: String,
        _ stub: @escaping @Sendable (MethodInvocationContext, repeat each Parameter) throws -> Void
    ) {
        defineStub(name) { (context: MethodInvocationContext) -> EJSONValue? in
            let reader = ParameterReader(context.params)
            try stub(context, repeat try reader.next((each Parameter).self))
            return nil
        }
    }

    /// Defines (or replaces) the stub of a method, its parameters decoded as the closure's types and its value
    /// encoded as EJSON (the stub's value, for ``MethodCall/stubValue`` and ``MethodOptions/returnStubValue``).
    ///
    /// For example:
    /// ```swift
    /// client.defineStub("todos.add") { (context, listId: String, text: String) -> String? in
    ///     try context.collection("todos").insert(["listId": .string(listId), "text": .string(text)])
    /// }
    /// ```
    public func defineStub<each Parameter: Decodable & SendableMetatype, Value: Encodable & SendableMetatype>(
        _ name: String,
        _ stub: @escaping @Sendable (MethodInvocationContext, repeat each Parameter) throws -> Value
    ) {
        defineStub(name) { (context: MethodInvocationContext) -> EJSONValue? in
            let reader = ParameterReader(context.params)
            let value = try stub(context, repeat try reader.next((each Parameter).self))
            return try EJSONEncoder().encode(value)
        }
    }
}

/// Decodes a call's parameters in order for a typed stub (a class: a pack expansion calls `next` once per type,
/// left to right).
private final class ParameterReader {
    let params: MethodParameters
    var position = 0

    init(_ params: MethodParameters) {
        self.params = params
    }

    func next<T: Decodable>(_ type: T.Type) throws(MethodParameterError) -> T {
        defer { position += 1 }
        return try params.decode(type, at: position)
    }
}
