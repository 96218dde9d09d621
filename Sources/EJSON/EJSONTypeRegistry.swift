import Foundation

/// The custom EJSON types this process knows (Meteor's `EJSON.addType`): `{"$type": name, "$value": …}` parses to
/// ``EJSONValue/custom(type:value:)`` only for registered names; any other name is an ``EJSONError``
/// (`Custom EJSON type X is not defined`), as in Meteor.
///
/// For example:
/// ```swift
/// EJSONTypeRegistry.shared.register("app.Money")
/// ```
public final class EJSONTypeRegistry: @unchecked Sendable {
    // @unchecked because `names` is protected by `lock`.

    /// The registry the parser consults.
    public static let shared = EJSONTypeRegistry()

    private let lock = NSLock()
    /// Protected by `lock`.
    private var names: Set<String> = []

    /// Registers a custom type name.
    public func register(_ name: String) {
        lock.withLock { _ = names.insert(name) }
    }

    /// Whether a custom type name is registered.
    public func isRegistered(_ name: String) -> Bool {
        lock.withLock { names.contains(name) }
    }
}
