import EJSON

/// A method call's parameters as its stub sees them. Reading one that was not passed gives `nil`, never a trap: a
/// stub must survive any call, `client.call("addPlayer")` without its name included.
///
/// For example:
/// ```swift
/// client.defineStub("players.rename") { context in
///     guard let id = context.params[0]?.stringValue, let name = context.params[1]?.stringValue else { return nil }
///     try context.collection("players").update(id, ["$set": ["name": .string(name)]])
///     return nil
/// }
/// ```
/// A typed stub (`defineStub("players.rename") { (context, id: String, name: String) in … }`) decodes the parameters
/// for you; ``decode(_:at:)`` decodes one.
public struct MethodParameters: Sendable, Equatable, Sequence, ExpressibleByArrayLiteral, CustomStringConvertible {
    /// The parameters in order.
    public let values: [EJSONValue]
    let methodName: String

    /// Creates parameters (for a test of a stub).
    public init(_ values: [EJSONValue], methodName: String = "") {
        self.values = values
        self.methodName = methodName
    }

    public init(arrayLiteral elements: EJSONValue...) {
        self.init(elements)
    }

    /// The parameter at `position` (from 0), or `nil` when the call passed fewer.
    public subscript(position: Int) -> EJSONValue? {
        // `Optional.none`, not `nil`: EJSONValue is ExpressibleByNilLiteral, so a bare `nil` here would be `.null`.
        guard values.indices.contains(position) else { return Optional.none }
        return values[position]
    }

    /// How many parameters the call passed.
    public var count: Int { values.count }
    /// Whether the call passed none.
    public var isEmpty: Bool { values.isEmpty }
    /// The first parameter, if any.
    public var first: EJSONValue? { values.first }

    public func makeIterator() -> IndexingIterator<[EJSONValue]> { values.makeIterator() }

    /// The parameter at `position` decoded as `T`. An absent parameter decodes as `null`: `nil` for an optional `T`,
    /// an error otherwise.
    /// - Throws: ``MethodParameterError`` saying which parameter and why.
    public func decode<T: Decodable>(_ type: T.Type = T.self, at position: Int) throws(MethodParameterError) -> T {
        do {
            return try EJSONDecoder().decode(type, from: self[position] ?? .null)
        } catch {
            throw MethodParameterError(
                methodName: methodName, position: position, expected: "\(T.self)",
                passed: self[position], underlying: error)
        }
    }

    public static func == (lhs: MethodParameters, rhs: MethodParameters) -> Bool { lhs.values == rhs.values }

    public var description: String { EJSON.stringify(.array(values)) }
}

/// A stub's parameter that is missing or does not decode as the stub's type. Thrown by a typed stub before it runs
/// (and by ``MethodParameters/decode(_:at:)``): as any stub's error, it is logged and the call still goes to the
/// server, whose answer decides (Meteor's rule); with ``MethodOptions/throwStubExceptions`` the caller gets it inside
/// a ``MethodError`` of kind ``MethodError/Kind/stubFailed`` (``MethodError/stubError``).
public struct MethodParameterError: Error, Sendable, CustomStringConvertible {
    /// The method's name.
    public let methodName: String
    /// The parameter's position (from 0).
    public let position: Int
    /// The type the stub expected.
    public let expected: String
    /// What the call passed (`nil`: nothing at this position).
    public let passed: EJSONValue?
    /// The decoder's error.
    public let underlying: any Error

    public var description: String {
        let what =
            passed.map { "got \(EJSON.stringify($0))" }
            ?? "the call passed only \(position) parameter\(position == 1 ? "" : "s")"
        return "method '\(methodName)': parameter \(position) is not a \(expected) (\(what))"
    }
}
