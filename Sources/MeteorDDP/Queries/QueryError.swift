/// A selector, sort specifier, projection or modifier that minimongo would refuse (or that cannot be applied to a
/// document), with minimongo's message.
///
/// For example, `try MongoSelector(["a": ["$gt": 1, "b": 2]])` throws
/// `QueryError(message: "Inconsistent operator: {\"$gt\":1,\"b\":2}")`.
public struct QueryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// minimongo's message for the same input.
    public let message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
