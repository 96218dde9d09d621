import Foundation

/// Meteor's Extended JSON: parse, serialise and compare ``EJSONValue``s exactly as Meteor's `ejson` package does.
///
/// For example:
/// ```swift
/// let value = try EJSON.parse(#"{"when":{"$date":1700000000123},"n":1}"#)
/// EJSON.stringify(value)                   // {"when":{"$date":1700000000123},"n":1}
/// EJSON.stringify(value, canonical: true)  // keys sorted at every level
/// EJSON.equals(value, value)               // true
/// ```
public enum EJSON {
    /// The deepest nesting of arrays and objects the parser accepts (deeper input is an ``EJSONError``).
    public static let maximumNestingDepth = 512

    // MARK: - Parsing

    /// How the parser reads what Meteor's EJSON would refuse.
    public struct ParseOptions: Sendable, Hashable {
        /// Refuse `{"$type": name, "$value": …}` for a name nobody registered with ``EJSONTypeRegistry`` (an
        /// ``EJSONError`` naming the type, Meteor's `Custom EJSON type X is not defined`). Off by default: such a
        /// value is kept as ``EJSONValue/custom(type:value:)`` with its name and raw value, written back as it was
        /// read, and the first one of each name is logged at `.debug` (label `EJSON`).
        public var refusesUnregisteredTypes: Bool

        /// Options with unregistered types kept (`refusesUnregisteredTypes` off) unless said otherwise.
        public init(refusesUnregisteredTypes: Bool = false) {
            self.refusesUnregisteredTypes = refusesUnregisteredTypes
        }
    }

    /// Parses EJSON text.
    /// - Throws: ``EJSONError`` with the byte offset of the problem.
    public static func parse(_ text: String, options: ParseOptions = .init()) throws -> EJSONValue {
        var text = text
        return try text.withUTF8 { bytes in
            var parser = EJSONParser(bytes: bytes, validateUTF8: false, options: options)
            return try parser.parseDocument()
        }
    }

    /// Parses EJSON from UTF-8 bytes (validated).
    /// - Throws: ``EJSONError`` with the byte offset of the problem.
    public static func parse(bytes: UnsafeBufferPointer<UInt8>, options: ParseOptions = .init()) throws -> EJSONValue {
        var parser = EJSONParser(bytes: bytes, validateUTF8: true, options: options)
        return try parser.parseDocument()
    }

    /// Parses EJSON from UTF-8 bytes (validated).
    public static func parse(bytes: [UInt8], options: ParseOptions = .init()) throws -> EJSONValue {
        try bytes.withUnsafeBufferPointer { try parse(bytes: $0, options: options) }
    }

    /// Parses EJSON from UTF-8 data (validated).
    public static func parse(data: Data, options: ParseOptions = .init()) throws -> EJSONValue {
        try data.withUnsafeBytes { raw in try parse(bytes: raw.bindMemory(to: UInt8.self), options: options) }
    }

    /// Parses plain JSON: no EJSON type is recognised (`{"$date": 1}` stays an object with a `$date` key). For
    /// reading what a frame says about itself when its EJSON does not parse.
    /// - Throws: ``EJSONError`` with the byte offset of the problem.
    public static func parseJSON(_ text: String) throws -> EJSONValue {
        var text = text
        return try text.withUTF8 { bytes in
            var parser = EJSONParser(bytes: bytes, validateUTF8: false)
            return try parser.parseDocument(raw: true)
        }
    }

    // MARK: - Serialising

    /// Serialises a value as Meteor's `EJSON.stringify` does: JavaScript's `JSON.stringify` rules (number formatting,
    /// no escaping of `/`, integer-like keys first, then insertion order), or with `canonical`, keys sorted by UTF-16
    /// code units at every level.
    public static func stringify(_ value: EJSONValue, canonical: Bool = false) -> String {
        var writer = EJSONWriter(canonical: canonical, indent: nil)
        writer.write(value)
        return writer.string
    }

    /// Serialises a value with line breaks and `indent` before every nesting level (Meteor's `indent` option).
    public static func stringify(_ value: EJSONValue, canonical: Bool = false, indent: String) -> String {
        var writer = EJSONWriter(canonical: canonical, indent: indent)
        writer.write(value)
        return writer.string
    }

    /// Serialises a value to UTF-8 bytes (the fast path for sending frames).
    public static func serialize(_ value: EJSONValue) -> [UInt8] {
        var writer = EJSONWriter(canonical: false, indent: nil)
        writer.write(value)
        return writer.bytes
    }

    // MARK: - Comparing

    /// Meteor's `EJSON.equals`: `NaN` equals `NaN`, arrays are ordered, object keys compare as sets unless
    /// `keyOrderSensitive`; dates by time, binary by bytes, custom types by name and value.
    public static func equals(_ a: EJSONValue, _ b: EJSONValue, keyOrderSensitive: Bool = false) -> Bool {
        guard keyOrderSensitive else { return a == b }
        switch (a, b) {
        case (.array(let x), .array(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { equals($0, $1, keyOrderSensitive: true) }
        case (.object(let x), .object(let y)):
            return x.count == y.count
                && zip(x, y).allSatisfy { $0.key == $1.key && equals($0.value, $1.value, keyOrderSensitive: true) }
        case (.custom(let tx, let vx), .custom(let ty, let vy)):
            // Decimals by value, as `==` compares them.
            if tx == "Decimal", ty == "Decimal" { return a == b }
            return tx == ty && equals(vx, vy, keyOrderSensitive: true)
        default:
            return a == b
        }
    }
}
