import Foundation

/// A hand-written recursive-descent EJSON parser over UTF-8 bytes.
///
/// Strings without escapes are made straight from their bytes; integers of up to 15 digits are converted without
/// `strtod`; EJSON objects (`$date`, `$binary`, `$InfNaN`, `$escape`, `$type`) are recognised as they close.
struct EJSONParser {
    private let bytes: UnsafeBufferPointer<UInt8>
    private let validateUTF8: Bool
    private var index = 0
    private var depth = 0

    init(bytes: UnsafeBufferPointer<UInt8>, validateUTF8: Bool) {
        self.bytes = bytes
        self.validateUTF8 = validateUTF8
    }

    mutating func parseDocument() throws(EJSONError) -> EJSONValue {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else { throw EJSONError(.trailingCharacters, at: index) }
        return value
    }

    // MARK: - Values

    private mutating func parseValue() throws(EJSONError) -> EJSONValue {
        guard index < bytes.count else { throw EJSONError(.unexpectedEndOfInput, at: index) }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(converting: true)
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        case let byte: throw EJSONError(.unexpectedCharacter(byte), at: index)
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(EJSONError) {
        let count = literal.utf8CodeUnitCount
        let pointer = literal.utf8Start
        for offset in 0..<count {
            guard index + offset < bytes.count else { throw EJSONError(.unexpectedEndOfInput, at: bytes.count) }
            guard bytes[index + offset] == pointer[offset] else { throw EJSONError(.unexpectedCharacter(bytes[index + offset]), at: index + offset) }
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

    private mutating func parseArray() throws(EJSONError) -> EJSONValue {
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
            elements.append(try parseValue())
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

    /// Parses an object; with `converting`, an object that matches an EJSON converter becomes that value.
    /// The value of an `$escape` key is parsed without converting its own level (its values are converted), as
    /// Meteor's `fromJSONValue` does; if the enclosing object then turns out not to be an escape, it is converted.
    private mutating func parseObject(converting: Bool) throws(EJSONError) -> EJSONValue {
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
        while true {
            skipWhitespace()
            guard index < bytes.count else { throw EJSONError(.unexpectedEndOfInput, at: index) }
            guard bytes[index] == UInt8(ascii: "\"") else { throw EJSONError(.unexpectedCharacter(bytes[index]), at: index) }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count else { throw EJSONError(.unexpectedEndOfInput, at: index) }
            guard bytes[index] == UInt8(ascii: ":") else { throw EJSONError(.unexpectedCharacter(bytes[index]), at: index) }
            index += 1
            skipWhitespace()
            if key == "$escape", index < bytes.count, bytes[index] == UInt8(ascii: "{") {
                object[key] = try parseObject(converting: false)
            } else {
                object[key] = try parseValue()
            }
            skipWhitespace()
            guard index < bytes.count else { throw EJSONError(.unexpectedEndOfInput, at: index) }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                depth -= 1
                if object.count > 1, case .object(let unconverted)? = object["$escape"] {
                    object["$escape"] = try EJSONTypes.fromJSONObject(unconverted, offset: start)
                }
                return converting ? try EJSONTypes.fromJSONObject(object, offset: start) : .object(object)
            case let byte: throw EJSONError(.unexpectedCharacter(byte), at: index)
            }
        }
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

    private func makeString(_ slice: UnsafeBufferPointer<UInt8>, isASCII: Bool, offset: Int) throws(EJSONError) -> String {
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
