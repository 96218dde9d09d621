import EJSON

/// A Mongo update modifier as Meteor's collections accept it: `$set`, `$unset`, `$inc`, `$push`, `$pull`,
/// `$addToSet`, or a whole replacement document. Dotted paths (`"location.city"`) reach into nested objects.
///
/// For example:
/// ```swift
/// let modifier = try MongoModifier(["$set": ["done": true], "$inc": ["count": 1]])
/// let updated = try modifier.apply(to: ["text": "milk", "count": 1]) // ["text": "milk", "count": 2, "done": true]
/// ```
public struct MongoModifier: Sendable, Equatable {
    /// Why a modifier cannot be used or applied.
    public struct Error: Swift.Error, Sendable, Equatable, CustomStringConvertible {
        /// The explanation, worded like Mongo's.
        public let message: String
        public var description: String { message }
    }

    enum Operation: Sendable, Equatable {
        case replace(EJSONObject)
        case operators([(name: String, fields: EJSONObject)])

        static func == (lhs: Operation, rhs: Operation) -> Bool {
            switch (lhs, rhs) {
            case (.replace(let a), .replace(let b)): return EJSONValue.object(a) == .object(b)
            case (.operators(let a), .operators(let b)):
                return a.count == b.count && zip(a, b).allSatisfy { $0.name == $1.name && EJSONValue.object($0.fields) == .object($1.fields) }
            default: return false
            }
        }
    }

    static let supportedOperators: Set<String> = ["$set", "$unset", "$inc", "$push", "$pull", "$addToSet"]

    let operation: Operation

    /// The modifier as it travels in `/collection/update` params.
    public let ejsonValue: EJSONValue

    /// Reads a modifier: an object of operators, or a replacement document (no key starts with `$`).
    /// - Throws: ``Error`` for a non-object, an unsupported operator, or operators mixed with plain fields.
    public init(_ value: EJSONValue) throws {
        guard case .object(let object) = value else { throw Error(message: "Modifier must be an object") }
        let operatorKeys = object.keys.filter { $0.hasPrefix("$") }
        if operatorKeys.isEmpty {
            operation = .replace(object)
        } else {
            guard operatorKeys.count == object.count else { throw Error(message: "Modifier cannot mix operators and fields") }
            var operations: [(String, EJSONObject)] = []
            for (name, fields) in object {
                guard Self.supportedOperators.contains(name) else { throw Error(message: "Unsupported modifier \(name)") }
                guard case .object(let fields) = fields else { throw Error(message: "Modifier \(name) must be an object") }
                operations.append((name, fields))
            }
            operation = .operators(operations)
        }
        ejsonValue = value
    }

    /// The document id a selector names: `"id"` or `{_id: "id"}` (the selectors Meteor's client-side collection
    /// methods accept from untrusted code).
    public static func documentID(inSelector selector: EJSONValue?) -> String? {
        switch selector {
        case .string(let id)?: return id
        case .object(let object)?: return object["_id"]?.stringValue
        default: return nil
        }
    }

    /// The fields after applying the modifier (`_id` is never changed by a replacement).
    public func apply(to fields: EJSONObject) throws -> EJSONObject {
        switch operation {
        case .replace(var replacement):
            replacement.removeValue(forKey: "_id")
            return replacement
        case .operators(let operations):
            var result = fields
            for (name, arguments) in operations {
                for (path, argument) in arguments {
                    let components = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
                    guard components.first != "_id" else { throw Error(message: "Mod on _id not allowed") }
                    try Self.update(&result, path: components[...]) { current in
                        try Self.apply(name, argument, to: current, path: path)
                    }
                }
            }
            return result
        }
    }

    /// The new value of one field (`nil`: remove it).
    private static func apply(_ name: String, _ argument: EJSONValue, to current: EJSONValue?, path: String) throws -> EJSONValue? {
        switch name {
        case "$set":
            return argument
        case "$unset":
            return nil
        case "$inc":
            guard case .number(let step) = argument else { throw Error(message: "Modifier $inc allowed for numbers only") }
            switch current {
            case nil: return .number(step)
            case .number(let n)?: return .number(n + step)
            default: throw Error(message: "Cannot apply $inc modifier to non-number \(path)")
            }
        case "$push":
            let array = try arrayValue(current, path: path, name: name)
            if case .object(let spec) = argument, let each = spec["$each"]?.arrayValue { return .array(array + each) }
            return .array(array + [argument])
        case "$addToSet":
            var array = try arrayValue(current, path: path, name: name)
            let values = (argument.objectValue?["$each"]?.arrayValue) ?? [argument]
            for value in values where !array.contains(value) { array.append(value) }
            return .array(array)
        case "$pull":
            let array = try arrayValue(current, path: path, name: name)
            return .array(array.filter { $0 != argument })
        default:
            throw Error(message: "Unsupported modifier \(name)")
        }
    }

    private static func arrayValue(_ current: EJSONValue?, path: String, name: String) throws -> [EJSONValue] {
        switch current {
        case nil: return []
        case .array(let array)?: return array
        default: throw Error(message: "Cannot apply \(name) modifier to non-array \(path)")
        }
    }

    /// Applies `change` at a dotted path, creating intermediate objects as Mongo does.
    private static func update(_ object: inout EJSONObject, path: ArraySlice<String>, _ change: (EJSONValue?) throws -> EJSONValue?) throws {
        guard let head = path.first else { return }
        if path.count == 1 {
            if let value = try change(object[head]) {
                object[head] = value
            } else {
                object.removeValue(forKey: head)
            }
            return
        }
        var child: EJSONObject
        switch object[head] {
        case nil: child = [:]
        case .object(let existing)?: child = existing
        default: throw Error(message: "cannot use the part (\(path.dropFirst().joined(separator: "."))) to traverse the element")
        }
        try update(&child, path: path.dropFirst(), change)
        object[head] = .object(child)
    }
}
