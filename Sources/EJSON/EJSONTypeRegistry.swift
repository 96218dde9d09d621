import Foundation
import Logging

/// The custom EJSON types this process knows (Meteor's `EJSON.addType`).
///
/// `{"$type": name, "$value": …}` parses to ``EJSONValue/custom(type:value:)`` whether or not its name is registered:
/// a registered name is the app's own type, an unregistered one is kept as an opaque value (its name and raw value),
/// so no document or method result is lost to a type the app did not declare. The first value of each unregistered
/// name is logged at `.debug`. ``EJSON/ParseOptions/refusesUnregisteredTypes`` keeps Meteor's refusal instead.
///
/// Registered by default, as in every Meteor app: `oid` (mongo-id's ObjectID) and `Decimal` (mongo-decimal).
///
/// For example:
/// ```swift
/// EJSONTypeRegistry.shared.register("app.Money")
/// ```
public final class EJSONTypeRegistry: @unchecked Sendable {
    // @unchecked because `names` and `reported` are protected by `lock`.

    /// The registry the parser consults.
    public static let shared = EJSONTypeRegistry()

    /// The most unregistered names remembered (and so logged) once each; later new names are not logged, so a
    /// server sending endless distinct names costs no memory.
    public static let maximumReportedUnregisteredTypes = 1_000

    private static let logger = Logger(label: "EJSON")

    private let lock = NSLock()
    /// Protected by `lock`.
    private var names: Set<String> = ["oid", "Decimal"]
    /// The unregistered names already logged; protected by `lock`.
    private var reported: Set<String> = []

    /// Registers a custom type name.
    public func register(_ name: String) {
        lock.withLock { _ = names.insert(name) }
    }

    /// Whether a custom type name is registered.
    public func isRegistered(_ name: String) -> Bool {
        lock.withLock { names.contains(name) }
    }

    /// Whether `name` is registered; if not and `reportingUnregistered`, logs it the first time it is seen.
    func isKnown(_ name: String, reportingUnregistered: Bool) -> Bool {
        let (known, first) = lock.withLock { () -> (Bool, Bool) in
            if names.contains(name) { return (true, false) }
            guard reportingUnregistered, reported.count < Self.maximumReportedUnregisteredTypes else {
                return (false, false)
            }
            return (false, reported.insert(name).inserted)
        }
        if first {
            Self.logger.debug(
                "custom EJSON type is not registered: its values are kept as they are",
                metadata: ["type": "\(name.prefix(100))"])
        }
        return known
    }
}
