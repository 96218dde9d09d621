import Foundation

/// A hand-written recursive-descent EJSON parser over UTF-8 bytes.
///
/// Strings without escapes are made straight from their bytes; integers of up to 15 digits are converted without
/// `strtod`; EJSON objects (`$date`, `$binary`, `$InfNaN`, `$escape`, `$type`) are recognised as they close.
struct EJSONParser {
    private let bytes: UnsafeBufferPointer<UInt8>
    private let validateUTF8: Bool
    private let types: EJSON.ParseOptions
    private var index = 0
    private var depth = 0

    init(bytes: UnsafeBufferPointer<UInt8>, validateUTF8: Bool, options: EJSON.ParseOptions = .init()) {
        self.bytes = bytes
        self.validateUTF8 = validateUTF8
        self.types = options
    }

    /// Parses the whole input; `raw`: as plain JSON, no EJSON type recognised (``EJSON/parseJSON(_:)``).
    mutating func parseDocument(raw: Bool = false) throws(EJSONError) -> EJSONValue {
        skipWhitespace()
        let value = try parseValue(raw: raw)
        skipWhitespace()
        guard index == bytes.count else { throw EJSONError(.trailingCharacters, at: index) }
        return value
    }

    // MARK: - Values

    /// `raw`: JSON as it is, no EJSON type recognised at any depth (the value of an `$escape` key, see
    /// ``parseObject(raw:)``).
    private mutating func parseValue(raw: Bool = false) throws(EJSONError) -> EJSONValue {
        guard index < bytes.count else { throw EJSONError(.unexpectedEndOfInput, at: index) }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(raw: raw)
        case UInt8(ascii: "["): return try parseArray(raw: raw)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        case let byte: throw EJSONError(.unexpectedCharacter(byte), at: index)
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(EJSONError) {
        let count = literal.utf8CodeUnitCount
        let pointer = literal.utf8Start
        for offset in 0..<count {
            guard index + offset < bytes.count else { throw EJSONError(.unexpectedEndOfInput, at: bytes.count) }
            guard bytes[index + offset] == pointer[offset] else {
                throw EJSONError(.unexpectedCharacter(bytes[index + offset]), at: index + offset)
            }
        }
        index += count
    }

    @inline(__always)
    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    private mutating func enterNesting() throws(EJSONError) {
        depth += 1
        guard depth <= EJSON.maximumNestingDepth else { throw EJSONError(.nestingTooDeep, at: index) }
    }

    private mutating func parseArray(raw: Bool) throws(EJSONError) -> EJSONValue {
        try enterNesting()
        index += 1
        var elements: [EJSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(raw: raw))
            skipWhitespace()
            guard index < bytes.count else { throw EJSONError(.unexpectedEndOfInput, at: index) }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                depth -= 1
                return .array(elements)
            case let byte: throw EJSONError(.unexpectedCharacter(byte), at: index)
            }
        }
    }

    /// Parses an object; unless `raw`, an object that matches an EJSON converter becomes that value.
    ///
    /// The value of an `$escape` key is read raw, since what it means depends on the enclosing object, known only as it
    /// closes: if that object is `{"$escape": {…}}` alone, the inner object's keys are taken literally and each of its
    /// values is converted (Meteor's `fromJSONValue`); otherwise the inner value is converted as any value is. Either
    /// way the raw value is then converted exactly as the same text would have been parsed
    /// (``converting(_:offset:_:)``), so an escape inside an escape means what it means in Meteor.
    private mutating func parseObject(raw: Bool) throws(EJSONError) -> EJSONValue {
        try enterNesting()
        let start = index
        index += 1
        var object = EJSONObject()
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(object)
        }
        /// Whether the `$escape` key's value was read raw.
        var rawEscape = false
        while true {
            skipWhitespace()
            guard index < bytes.count else { throw EJSONError(.unexpectedEndOfInput, at: index) }
            guard bytes[index] == UInt8(ascii: "\"") else {
                throw EJSONError(.unexpectedCharacter(bytes[index]), at: index)
            }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count else { throw EJSONError(.unexpectedEndOfInput, at: index) }
            guard bytes[index] == UInt8(ascii: ":") else {
                throw EJSONError(.unexpectedCharacter(bytes[index]), at: index)
            }
            index += 1
            skipWhitespace()
            if !raw, key == "$escape", index < bytes.count, bytes[index] == UInt8(ascii: "{") {
                object[key] = try parseValue(raw: true)
                rawEscape = true
            } else {
                // A duplicate key replaces the value: the last one read is what counts.
                if key == "$escape" { rawEscape = false }
                object[key] = try parseValue(raw: raw)
            }
            skipWhitespace()
            guard index < bytes.count else { throw EJSONError(.unexpectedEndOfInput, at: index) }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                depth -= 1
                if raw { return .object(object) }
                if rawEscape, case .object(let inner)? = object["$escape"] {
                    if object.count == 1 { return .object(try Self.convertingValues(of: inner, offset: start, types)) }
                    object["$escape"] = try Self.converting(.object(inner), offset: start, types)
                }
                return try EJSONTypes.fromJSONObject(object, offset: start, types)
            case let byte: throw EJSONError(.unexpectedCharacter(byte), at: index)
            }
        }
    }

    /// A raw value (read with `raw`) as it would have been parsed without: EJSON types recognised at every depth.
    private static func converting(_ value: EJSONValue, offset: Int, _ types: EJSON.ParseOptions) throws(EJSONError)
        -> EJSONValue
    {
        switch value {
        case .array(let elements):
            var converted: [EJSONValue] = []
            converted.reserveCapacity(elements.count)
            for element in elements { converted.append(try converting(element, offset: offset, types)) }
            return .array(converted)
        case .object(let object):
            // `{"$escape": {…}}` alone: the inner keys literally, their values converted.
            if object.count == 1, object.keys[0] == "$escape", case .object(let inner) = object.values[0] {
                return .object(try convertingValues(of: inner, offset: offset, types))
            }
            return try EJSONTypes.fromJSONObject(
                try convertingValues(of: object, offset: offset, types), offset: offset, types)
        default:
            return value
        }
    }

    /// A raw object's values converted (``converting(_:offset:_:)``), its keys as they are.
    private static func convertingValues(of object: EJSONObject, offset: Int, _ types: EJSON.ParseOptions)
        throws(EJSONError) -> EJSONObject
    {
        var converted = object
        for position in converted.values.indices {
            converted.values[position] = try converting(converted.values[position], offset: offset, types)
        }
        return converted
    }

    // MARK: - Strings

    private mutating func parseString() throws(EJSONError) -> String {
        index += 1
        let start = index
        var isASCII = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                return try makeString(slice, isASCII: isASCII, offset: start)
            }
            if byte == UInt8(ascii: "\\") { return try parseEscapedString(from: start) }
            if byte < 0x20 { throw EJSONError(.controlCharacterInString, at: index) }
            if byte >= 0x80 { isASCII = false }
            index += 1
        }
        throw EJSONError(.unexpectedEndOfInput, at: index)
    }

    private func makeString(_ slice: UnsafeBufferPointer<UInt8>, isASCII: Bool, offset: Int) throws(EJSONError)
        -> String
    {
        if isASCII || !validateUTF8 { return String(decoding: slice, as: UTF8.self) }
        guard let string = String(validating: slice, as: UTF8.self) else { throw EJSONError(.invalidUTF8, at: offset) }
        return string
    }

    /// The slow path: a string with escapes, decoded into a byte buffer.
    private mutating func parseEscapedString(from start: Int) throws(EJSONError) -> String {
        let (buffer, isASCII) = try JSONScanning.escapedString(bytes, from: start, at: &index)
        return try buffer.withUnsafeBufferPointer { (pointer) throws(EJSONError) -> String in
            try makeString(pointer, isASCII: isASCII, offset: start)
        }
    }

    // MARK: - Numbers

    private mutating func parseNumber() throws(EJSONError) -> Double {
        try JSONScanning.number(bytes, at: &index)
    }
}
