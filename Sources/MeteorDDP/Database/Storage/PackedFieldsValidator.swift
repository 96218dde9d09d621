import EJSON

/// Checks packed fields that come from outside this process (the offline store's file) before they become a
/// ``Document``: every length within the bytes, every tag known, every container's byte count exact, nesting at most
/// ``maximumDepth`` deep, names unique within each object, text valid UTF-8, numbers, varints and flags in their
/// canonical form: what validates is exactly what the cache itself would have written. `PackedFieldsReader` trusts
/// what it reads; a file changed behind the library's back then gives a typed error instead of a read out of bounds.
/// SPI (`@_spi(Storage)`) for the fuzz target.
@_spi(Storage)
public struct PackedFieldsValidator {
    /// Why packed fields were refused.
    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    /// The deepest nesting accepted (the parser accepts deeper JSON, but nothing this deep is stored by a real app).
    public static let maximumDepth = 512

    private let bytes: UnsafeRawBufferPointer
    private var offset = 0

    private init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// Validates a document's packed fields; returns how many fields there are.
    public static func fieldCount(of bytes: UnsafeRawBufferPointer) throws(Invalid) -> Int {
        var validator = PackedFieldsValidator(bytes)
        var names = FieldNames()
        while validator.offset < bytes.count {
            try validator.field(depth: 0, names: &names)
        }
        return names.count
    }

    /// The names seen in one object, to refuse a repeated one.
    private struct FieldNames {
        private var spans: [UnsafeRawBufferPointer] = []
        private var set: Set<String>?
        var count: Int { spans.count }

        mutating func insert(_ name: UnsafeRawBufferPointer) throws(Invalid) {
            if spans.count >= 16 {
                if set == nil { set = Set(spans.map { String(decoding: $0, as: UTF8.self) }) }
                guard set!.insert(String(decoding: name, as: UTF8.self)).inserted else {
                    throw Invalid(description: "a field name repeated")
                }
            } else {
                for seen in spans where PackedFields.bytesEqual(seen, name) {
                    throw Invalid(description: "a field name repeated")
                }
            }
            spans.append(name)
        }
    }

    // MARK: - Pieces

    private mutating func byte() throws(Invalid) -> UInt8 {
        guard offset < bytes.count else { throw Invalid(description: "truncated at byte \(offset)") }
        defer { offset += 1 }
        return bytes[offset]
    }

    private mutating func varint() throws(Invalid) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while shift < 64 {
            let next = try byte()
            result |= UInt64(next & 0x7F) << shift
            if next < 0x80 {
                guard next != 0 || shift == 0 else {
                    throw Invalid(description: "a varint not in its shortest form at byte \(offset - 1)")
                }
                return result
            }
            shift += 7
        }
        throw Invalid(description: "a varint longer than 64 bits at byte \(offset)")
    }

    /// A length-prefixed run of bytes.
    private mutating func span() throws(Invalid) -> UnsafeRawBufferPointer {
        let count = try varint()
        guard count <= UInt64(bytes.count - offset) else {
            throw Invalid(description: "a length past the end at byte \(offset)")
        }
        defer { offset += Int(count) }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + Int(count))])
    }

    /// A length-prefixed run of valid UTF-8.
    private mutating func text() throws(Invalid) -> UnsafeRawBufferPointer {
        let text = try span()
        guard Self.isValidUTF8(text) else { throw Invalid(description: "text that is not UTF-8 before byte \(offset)") }
        return text
    }

    private mutating func double() throws(Invalid) -> Double {
        guard bytes.count - offset >= 8 else { throw Invalid(description: "truncated number at byte \(offset)") }
        defer { offset += 8 }
        return Double(bitPattern: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
    }

    /// A container's byte count: the offset it must end at.
    private mutating func containerEnd() throws(Invalid) -> Int {
        guard bytes.count - offset >= 4 else { throw Invalid(description: "truncated container at byte \(offset)") }
        let count = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        offset += 4
        guard count <= bytes.count - offset else {
            throw Invalid(description: "a container past the end at byte \(offset)")
        }
        return offset + count
    }

    // MARK: - Fields and values

    private mutating func field(depth: Int, names: inout FieldNames) throws(Invalid) {
        try names.insert(try text())
        try value(depth: depth)
    }

    private mutating func value(depth: Int) throws(Invalid) {
        guard depth < Self.maximumDepth else { throw Invalid(description: "nested deeper than \(Self.maximumDepth)") }
        let raw = try byte()
        guard let tag = PackedFields.Tag(rawValue: raw) else {
            throw Invalid(description: "unknown tag \(raw) at byte \(offset - 1)")
        }
        switch tag {
        case .null, .false, .true:
            break
        case .double:
            let number = try double()
            guard PackedFields.exactInteger(number) == nil, !number.isNaN || number.bitPattern == Double.nan.bitPattern
            else {
                throw Invalid(description: "a number not in its canonical form at byte \(offset - 8)")
            }
        case .date:
            let milliseconds = try double()
            guard !milliseconds.isNaN || milliseconds.bitPattern == Double.nan.bitPattern,
                milliseconds.bitPattern != (-0.0).bitPattern
            else {
                throw Invalid(description: "a date not in its canonical form at byte \(offset - 8)")
            }
        case .integer:
            let integer = PackedFields.unzigzag(try varint())
            guard integer.magnitude <= UInt64(PackedFields.maximumExactInteger) else {
                throw Invalid(description: "an integer out of range")
            }
        case .string:
            _ = try text()
        case .binary:
            _ = try span()
        case .regularExpression:
            _ = try text()
            let flags = String(decoding: try text(), as: UTF8.self)
            guard EJSONValue.normalizedRegularExpressionFlags(flags) == flags else {
                throw Invalid(description: "regular expression flags not normalised")
            }
        case .array:
            let end = try containerEnd()
            let count = try varint()
            guard offset <= end, count <= UInt64(end - offset) else {
                throw Invalid(description: "an array longer than its bytes")
            }
            for _ in 0..<count { try value(depth: depth + 1) }
            guard offset == end else { throw Invalid(description: "an array's size does not match its contents") }
        case .object:
            let end = try containerEnd()
            let count = try varint()
            guard offset <= end, count <= UInt64(end - offset) else {
                throw Invalid(description: "an object longer than its bytes")
            }
            var names = FieldNames()
            for _ in 0..<count { try field(depth: depth + 1, names: &names) }
            guard offset == end else { throw Invalid(description: "an object's size does not match its contents") }
        case .custom:
            let end = try containerEnd()
            _ = try text()
            try value(depth: depth + 1)
            guard offset == end else { throw Invalid(description: "a custom value's size does not match its contents") }
        }
    }

    /// Whether the bytes are well-formed UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF).
    static func isValidUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        let count = bytes.count
        while index < count {
            let lead = bytes[index]
            if lead < 0x80 {
                index += 1
                continue
            }
            let length: Int
            var lower: UInt8 = 0x80
            var upper: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0:
                length = 3
                lower = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED:
                length = 3
                upper = 0x9F
            case 0xF0:
                length = 4
                lower = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4:
                length = 4
                upper = 0x8F
            default: return false
            }
            guard count - index >= length else { return false }
            let second = bytes[index + 1]
            guard second >= lower, second <= upper else { return false }
            for continuation in 2..<max(2, length) where bytes[index + continuation] & 0xC0 != 0x80 { return false }
            index += length
        }
        return true
    }
}

extension Document {
    /// A document from packed fields read from outside this process (validated first). SPI for the fuzz target.
    @_spi(Storage)
    public init(id: String, validatingPackedFields bytes: UnsafeRawBufferPointer) throws(PackedFieldsValidator.Invalid)
    {
        let fieldCount = try PackedFieldsValidator.fieldCount(of: bytes)
        self.init(id: id, fieldCount: fieldCount, packedFields: bytes)
    }
}
