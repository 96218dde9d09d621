import EJSON

/// A method call in flight, as Meteor 3's `Meteor.callAsync` returns it: the stub's value at once, the server's result
/// once it has answered and the call's writes are visible.
///
/// For example (JavaScript: `const p = Meteor.callAsync("todos.add", "milk"); await p.stubValuePromise; await p`):
/// ```swift
/// let call = client.callAsync("todos.add", params: ["milk"])
/// let localID = try await call.stubValue      // what the stub returned (nil: no stub, or it returned nothing)
/// let serverID = try await call.value         // after `result` and `updated`
/// ```
/// Awaiting is optional: the call goes on whether or not anything waits for it, and a cancelled wait ends only that
/// wait (`CancellationError`).
public struct MethodCall<Value: Sendable>: Sendable {
    /// The method's name.
    public let methodName: String
    let stub: OneShot<EJSONValue?>
    let server: OneShot<EJSONValue?>
    let decode: @Sendable (EJSONValue?) throws -> Value

    /// What the stub returned, decoded: `nil` when the method has no stub or its stub returned nothing.
    ///
    /// Ready as soon as the stub ran (at once, unless the call was made inside ``Database/performUpdates(_:)``: then
    /// when that transaction commits).
    /// - Throws: the stub's error (the call still went to the server unless ``MethodOptions/throwStubExceptions``),
    ///   ``MethodError`` of kind ``MethodError/Kind/clientClosed`` on a closed client, a `DecodingError`, or
    ///   `CancellationError`.
    public var stubValue: Value? {
        get async throws {
            guard let value = try await stub.value else { return nil }
            return try decode(value)
        }
    }

    /// The server's result, decoded, once the server has answered *and* the call's writes are visible in the cache.
    /// - Throws: the server's ``MeteorError`` when it refused the call, ``MethodError`` for a local failure, a
    ///   `DecodingError`, or `CancellationError`.
    public var value: Value {
        get async throws { try decode(try await server.value) }
    }
}

extension DDPClient {
    /// Calls a method as Meteor 3's `Meteor.callAsync` does: the stub runs now; the returned ``MethodCall`` gives its
    /// value (``MethodCall/stubValue``) and the server's result (``MethodCall/value``).
    ///
    /// For example:
    /// ```swift
    /// let call = client.callAsync("todos.add", params: ["list1", "milk"])
    /// print("shown at once as", try await call.stubValue ?? nil)
    /// print("the server says", try await call.value)
    /// ```
    /// The server's result is `.null` when the method returned nothing.
    public func callAsync(_ name: String, params: [EJSONValue] = [], options: MethodOptions = MethodOptions())
        -> MethodCall<EJSONValue>
    {
        startCall(name, params: { params }, options: options) { $0 ?? .null }
    }

    /// Calls a method with `Encodable` parameters as Meteor 3's `Meteor.callAsync` does; the stub's value and the
    /// server's result decode as `Result`.
    ///
    /// For example:
    /// ```swift
    /// let call = client.callAsync("players.add", "Ada", returning: String.self)
    /// let shownID = try await call.stubValue      // String?
    /// let id = try await call.value               // String
    /// ```
    public func callAsync<Result: Decodable & Sendable>(
        _ name: String,
        _ params: any Encodable...,
        returning type: Result.Type = Result.self,
        options: MethodOptions = MethodOptions()
    ) -> MethodCall<Result> {
        let encoder = EJSONEncoder()
        return startCall(name, params: { try params.map { try encoder.encode($0) } }, options: options) {
            try EJSONDecoder().decode(Result.self, from: $0 ?? .null)
        }
    }

    private func startCall<Value: Sendable>(
        _ name: String,
        params: () throws -> [EJSONValue],
        options: MethodOptions,
        decode: @escaping @Sendable (EJSONValue?) throws -> Value
    ) -> MethodCall<Value> {
        let call = MethodCall(methodName: name, stub: OneShot(), server: OneShot(), decode: decode)
        do {
            _ = try self.call(
                name, params: try params(), options: options, completesInline: true,
                stubOutcome: { call.stub.fulfill($0) }
            ) { call.server.fulfill($0) }
        } catch {
            // Parameters that do not encode, or a stub's error with `throwStubExceptions` (nothing was sent).
            call.stub.fulfill(.failure(error))
            call.server.fulfill(.failure(error))
        }
        return call
    }
}
