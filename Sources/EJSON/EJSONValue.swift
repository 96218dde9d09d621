import Foundation
import OrderedCollections

/// The fields of an EJSON object, in insertion order.
///
/// Meteor's wire format keeps JavaScript's own-property order, so the order in which keys are
/// inserted is the order in which they are serialised (integer-like keys aside, see ``EJSON/stringify(_:canonical:)``).
public typealias EJSONObject = OrderedDictionary<String, EJSONValue>

/// A value of Meteor's Extended JSON: JSON plus dates, binary data and custom types.
///
/// For example:
/// ```swift
/// let todo: EJSONValue = ["text": "milk", "done": false, "createdAt": .date(Date())]
/// print(EJSON.stringify(todo)) // {"text":"milk","done":false,"createdAt":{"$date":1700000000000}}
/// ```
///
/// Numbers are IEEE-754 doubles, as in JavaScript; `NaN` and the infinities travel as `{"$InfNaN": …}`.
public enum EJSONValue: Sendable {
    /// JSON `null`.
    case null
    /// A boolean.
    case bool(Bool)
    /// A number (a JavaScript double).
    case number(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([EJSONValue])
    /// An object whose keys keep their insertion order.
    case object(EJSONObject)
    /// A date, as milliseconds since 1970-01-01T00:00:00Z (`{"$date": ms}` on the wire).
    case date(millisecondsSince1970: Double)
    /// Binary data (`{"$binary": base64}` on the wire).
    case binary(Data)
    /// A custom type registered with ``EJSONTypeRegistry`` (`{"$type": name, "$value": json}` on the wire).
    indirect case custom(type: String, value: EJSONValue)
    /// A JavaScript regular expression (`{"$regexp": source, "$flags": flags}` on the wire), as Meteor's EJSON
    /// carries it. Flags are normalised as Meteor does when parsing and writing: only `g i m u y`, each once, in that
    /// order (see ``normalizedRegularExpressionFlags(_:)``); the pattern is kept as written (it is compiled only
    /// when a selector uses it).
    case regularExpression(pattern: String, flags: String)
}

extension EJSONValue {
    /// Meteor's flag normalisation for EJSON regular expressions: the first 50 characters, only `g`, `i`, `m`, `u`
    /// and `y`, each once, in the order JavaScript's `RegExp.prototype.flags` lists them.
    public static func normalizedRegularExpressionFlags(_ flags: String) -> String {
        let kept = Set(flags.unicodeScalars.prefix(50))
        return String(String.UnicodeScalarView("gimuy".unicodeScalars.filter { kept.contains($0) }))
    }
}

// MARK: - Convenience constructors and accessors

extension EJSONValue {
    /// A date value.
    public static func date(_ date: Date) -> EJSONValue {
        .date(millisecondsSince1970: (date.timeIntervalSince1970 * 1000).rounded())
    }

    /// The string, if this is a string.
    @inlinable public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The number, if this is a number.
    @inlinable public var doubleValue: Double? {
        if case .number(let n) = self { return n }
        return nil
    }

    /// The number as an `Int`, if this is a number with an exact integer value.
    public var intValue: Int? {
        guard case .number(let n) = self, n.rounded() == n, abs(n) < 9.3e18 else { return nil }
        return Int(n)
    }

    /// The boolean, if this is a boolean.
    @inlinable public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// The elements, if this is an array.
    @inlinable public var arrayValue: [EJSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// The fields, if this is an object.
    @inlinable public var objectValue: EJSONObject? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// The date, if this is a date.
    public var dateValue: Date? {
        if case .date(let ms) = self { return Date(timeIntervalSince1970: ms / 1000) }
        return nil
    }

    /// The bytes, if this is binary data.
    public var binaryValue: Data? {
        if case .binary(let d) = self { return d }
        return nil
    }

    /// Whether this is `null`.
    @inlinable public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The value under `key` when this is an object, otherwise `nil`.
    @inlinable public subscript(key: String) -> EJSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    /// The element at `index` when this is an array and the index is in range, otherwise `nil`.
    @inlinable public subscript(index: Int) -> EJSONValue? {
        if case .array(let a) = self, a.indices.contains(index) { return a[index] }
        return nil
    }
}

// MARK: - Literals

extension EJSONValue: ExpressibleByNilLiteral {
    public init(nilLiteral: ()) { self = .null }
}

extension EJSONValue: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension EJSONValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
}

extension EJSONValue: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .number(value) }
}

extension EJSONValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
}

extension EJSONValue: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: EJSONValue...) { self = .array(elements) }
}

extension EJSONValue: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, EJSONValue)...) {
        var object = EJSONObject(minimumCapacity: elements.count)
        for (key, value) in elements { object[key] = value }
        self = .object(object)
    }
}

extension EJSONValue: CustomStringConvertible {
    /// The value as EJSON text, as `EJSON.stringify` writes it (`{"n":1,"at":{"$date":0}}`).
    public var description: String { EJSON.stringify(self) }
}
