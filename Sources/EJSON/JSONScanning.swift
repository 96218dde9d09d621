/// JSON's numbers and strings with escapes read from UTF-8 bytes: shared by ``EJSON``'s parser and MeteorDDP's packed
/// decoding of data messages (package access), so that both read every number and escape alike, errors included.
package enum JSONScanning {
    // MARK: - Numbers

    /// The number at `index` (a `-` or a digit), `index` moved past it: integers of up to 15 digits and decimals that
    /// a double holds exactly (Clinger's fast path) are computed directly, anything else by `Double(String)`.
    ///
    /// - Throws: ``EJSONError`` for a malformed number, or one beyond a double's range (JavaScript would read
    ///   Infinity; we refuse rather than invent one).
    package static func number(_ bytes: UnsafeBufferPointer<UInt8>, at index: inout Int) throws(EJSONError) -> Double {
        let start = index
        var negative = false
        if bytes[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        guard index < bytes.count else { throw EJSONError(.unexpectedEndOfInput, at: index) }
        var integer: UInt64 = 0
        var digits = 0
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            digits = 1
        } else {
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                if digits < 19 { integer = integer &* 10 &+ UInt64(bytes[index] - UInt8(ascii: "0")) }
                digits += 1
                index += 1
            }
        }
        guard digits > 0 else {
            throw index < bytes.count
                ? EJSONError(.unexpectedCharacter(bytes[index]), at: index)
                : EJSONError(.unexpectedEndOfInput, at: index)
        }
        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            try skipDigits(bytes, at: &index)
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            try skipDigits(bytes, at: &index)
        }
        if isInteger, digits <= 15 {
            let value = Double(integer)
            return negative ? -value : value
        }
        let text = UnsafeBufferPointer(rebasing: bytes[start..<index])
        if let exact = exactDecimal(text) { return exact }
        guard let value = Double(String(decoding: text, as: UTF8.self)), value.isFinite else {
            throw EJSONError(.numberOutOfRange, at: start)
        }
        return value
    }

    private static func skipDigits(_ bytes: UnsafeBufferPointer<UInt8>, at index: inout Int) throws(EJSONError) {
        let start = index
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
        guard index > start else {
            throw index < bytes.count
                ? EJSONError(.unexpectedCharacter(bytes[index]), at: index)
                : EJSONError(.unexpectedEndOfInput, at: index)
        }
    }

    /// Powers of ten a double holds exactly.
    private static let exactPowersOfTen: [Double] = (0...22).map { exponent in
        (0..<exponent).reduce(1.0) { value, _ in value * 10 }
    }

    /// A well-formed JSON number whose significant digits fit in 2^53 and whose decimal exponent is within ±22: one
    /// multiplication or division of two exact doubles, so rounded once, exactly as a correctly rounded parse
    /// (`Double(String)`) rounds it (Clinger's fast path). `nil` for any other number.
    private static func exactDecimal(_ text: UnsafeBufferPointer<UInt8>) -> Double? {
        var index = 0
        let negative = text[0] == UInt8(ascii: "-")
        if negative { index += 1 }
        var mantissa: UInt64 = 0
        var significant = 0
        var exponent = 0
        var seenPoint = false
        while index < text.count {
            let byte = text[index]
            if byte == UInt8(ascii: ".") {
                seenPoint = true
            } else if byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                if mantissa != 0 || byte != UInt8(ascii: "0") { significant += 1 }
                guard significant <= 19 else { return nil }
                mantissa = mantissa * 10 + UInt64(byte - UInt8(ascii: "0"))
                if seenPoint { exponent -= 1 }
            } else {
                break
            }
            index += 1
        }
        if index < text.count {
            // The exponent part (`e`/`E`, sign, digits: well formed, checked by `number`).
            index += 1
            var negativeExponent = false
            if text[index] == UInt8(ascii: "+") || text[index] == UInt8(ascii: "-") {
                negativeExponent = text[index] == UInt8(ascii: "-")
                index += 1
            }
            var written = 0
            while index < text.count {
                written = written * 10 + Int(text[index] - UInt8(ascii: "0"))
                guard written <= 1_000 else { return nil }
                index += 1
            }
            exponent += negativeExponent ? -written : written
        }
        guard mantissa <= 1 << 53, abs(exponent) <= 22 else { return nil }
        let value =
            exponent < 0
            ? Double(mantissa) / exactPowersOfTen[-exponent] : Double(mantissa) * exactPowersOfTen[exponent]
        return negative ? -value : value
    }

    // MARK: - Escapes

    /// The string whose content starts at `start`, `index` at its first backslash: its bytes with every escape
    /// decoded, and whether they are all ASCII; `index` moved past the closing quote.
    ///
    /// - Throws: ``EJSONError`` for an invalid escape (at its backslash), a control character, or the end of the
    ///   input before the closing quote.
    package static func escapedString(
        _ bytes: UnsafeBufferPointer<UInt8>, from start: Int, at index: inout Int
    ) throws(EJSONError) -> (bytes: [UInt8], isASCII: Bool) {
        var buffer = [UInt8](UnsafeBufferPointer(rebasing: bytes[start..<index]))
        var isASCII = !buffer.contains { $0 >= 0x80 }
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return (buffer, isASCII)
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw EJSONError(.unexpectedEndOfInput, at: index) }
                let escape = bytes[index]
                index += 1
                if let unescaped = singleCharacterEscape(escape) {
                    buffer.append(unescaped)
                } else if escape == UInt8(ascii: "u") {
                    let scalar = try unicodeEscape(bytes, at: &index)
                    if scalar.value >= 0x80 { isASCII = false }
                    buffer.append(contentsOf: UTF8.encode(scalar)!)
                } else {
                    throw EJSONError(.invalidEscape, at: index - 2)
                }
            default:
                if byte < 0x20 { throw EJSONError(.controlCharacterInString, at: index) }
                if byte >= 0x80 { isASCII = false }
                buffer.append(byte)
                index += 1
            }
        }
        throw EJSONError(.unexpectedEndOfInput, at: index)
    }

    /// The byte a one-character escape stands for (`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`: pass the byte after
    /// the backslash); `nil` for any other, `u` included.
    private static func singleCharacterEscape(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): byte
        case UInt8(ascii: "b"): 0x08
        case UInt8(ascii: "f"): 0x0C
        case UInt8(ascii: "n"): 0x0A
        case UInt8(ascii: "r"): 0x0D
        case UInt8(ascii: "t"): 0x09
        default: nil
        }
    }

    /// `\uXXXX` with `index` just past the `u`, `index` moved past it (and past a second `\uXXXX` joined as a
    /// surrogate pair).
    ///
    /// - Throws: ``EJSONError`` (`invalidEscape`, at the backslash) for a lone surrogate (a Swift string cannot hold
    ///   one) or a digit that is not hexadecimal; `unexpectedEndOfInput` when the input ends first.
    private static func unicodeEscape(_ bytes: UnsafeBufferPointer<UInt8>, at index: inout Int) throws(EJSONError)
        -> Unicode.Scalar
    {
        let escapeStart = index - 2
        let first = try hex4(bytes, at: &index)
        if (0xD800...0xDBFF).contains(first) {
            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else {
                throw EJSONError(.invalidEscape, at: escapeStart)
            }
            index += 2
            let second = try hex4(bytes, at: &index)
            guard (0xDC00...0xDFFF).contains(second) else { throw EJSONError(.invalidEscape, at: escapeStart) }
            let value = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            return Unicode.Scalar(value)!
        }
        guard let scalar = Unicode.Scalar(first) else { throw EJSONError(.invalidEscape, at: escapeStart) }
        return scalar
    }

    private static func hex4(_ bytes: UnsafeBufferPointer<UInt8>, at index: inout Int) throws(EJSONError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw EJSONError(.unexpectedEndOfInput, at: bytes.count) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw EJSONError(.invalidEscape, at: index)
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }
}
