/// Checks packed fields that come from outside this process (the offline store's file) before they become a
/// ``Document``: every length within the bytes, every tag known, every container's byte count exact, nesting at most
/// ``maximumDepth`` deep, numbers in their canonical form. ``PackedFieldsReader`` trusts what it reads; a file changed
/// behind the library's back then gives a typed error instead of a read out of bounds.
struct PackedFieldsValidator {
    struct Invalid: Error, CustomStringConvertible {
        let description: String
    }

    /// The deepest nesting accepted (the parser accepts deeper JSON, but nothing this deep is stored by a real app).
    static let maximumDepth = 512

    private let bytes: UnsafeRawBufferPointer
    private var offset = 0

    private init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// Validates a document's packed fields; returns how many fields there are.
    static func fieldCount(of bytes: UnsafeRawBufferPointer) throws(Invalid) -> Int {
        var validator = PackedFieldsValidator(bytes)
        var count = 0
        while validator.offset < bytes.count {
            try validator.field(depth: 0)
            count += 1
        }
        return count
    }

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
            if next < 0x80 { return result }
            shift += 7
        }
        throw Invalid(description: "a varint longer than 64 bits at byte \(offset)")
    }

    private mutating func skip(_ count: UInt64) throws(Invalid) {
        guard count <= UInt64(bytes.count - offset) else { throw Invalid(description: "a length past the end at byte \(offset)") }
        offset += Int(count)
    }

    private mutating func span() throws(Invalid) {
        try skip(try varint())
    }

    private mutating func double() throws(Invalid) -> Double {
        guard bytes.count - offset >= 8 else { throw Invalid(description: "truncated number at byte \(offset)") }
        defer { offset += 8 }
        return Double(bitPattern: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
    }

    /// A container's byte count: the end it must finish at.
    private mutating func containerEnd() throws(Invalid) -> Int {
        guard bytes.count - offset >= 4 else { throw Invalid(description: "truncated container at byte \(offset)") }
        let count = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        offset += 4
        guard count <= bytes.count - offset else { throw Invalid(description: "a container past the end at byte \(offset)") }
        return offset + count
    }

    private mutating func field(depth: Int) throws(Invalid) {
        try span()
        try value(depth: depth)
    }

    private mutating func value(depth: Int) throws(Invalid) {
        guard depth < Self.maximumDepth else { throw Invalid(description: "nested deeper than \(Self.maximumDepth)") }
        let raw = try byte()
        guard let tag = PackedFields.Tag(rawValue: raw) else { throw Invalid(description: "unknown tag \(raw) at byte \(offset - 1)") }
        switch tag {
        case .null, .false, .true:
            break
        case .double:
            let number = try double()
            guard PackedFields.exactInteger(number) == nil, !number.isNaN || number.bitPattern == Double.nan.bitPattern else {
                throw Invalid(description: "a number not in its canonical form at byte \(offset - 8)")
            }
        case .date:
            let milliseconds = try double()
            guard (!milliseconds.isNaN || milliseconds.bitPattern == Double.nan.bitPattern), milliseconds.bitPattern != (-0.0).bitPattern else {
                throw Invalid(description: "a date not in its canonical form at byte \(offset - 8)")
            }
        case .integer:
            let integer = PackedFields.unzigzag(try varint())
            guard integer.magnitude <= UInt64(PackedFields.maximumExactInteger) else { throw Invalid(description: "an integer out of range") }
        case .string, .binary:
            try span()
        case .regularExpression:
            try span()
            try span()
        case .array:
            let end = try containerEnd()
            let count = try varint()
            for _ in 0..<min(count, UInt64(bytes.count)) { try value(depth: depth + 1) }
            guard count <= UInt64(bytes.count), offset == end else { throw Invalid(description: "an array's size does not match its contents") }
        case .object:
            let end = try containerEnd()
            let count = try varint()
            for _ in 0..<min(count, UInt64(bytes.count)) { try field(depth: depth + 1) }
            guard count <= UInt64(bytes.count), offset == end else { throw Invalid(description: "an object's size does not match its contents") }
        case .custom:
            let end = try containerEnd()
            try span()
            try value(depth: depth + 1)
            guard offset == end else { throw Invalid(description: "a custom value's size does not match its contents") }
        }
    }
}

extension Document {
    /// A document from packed fields read from outside this process (validated first).
    init(id: String, validatingPackedFields bytes: UnsafeRawBufferPointer) throws(PackedFieldsValidator.Invalid) {
        let fieldCount = try PackedFieldsValidator.fieldCount(of: bytes)
        self.init(id: id, fieldCount: fieldCount, packedFields: bytes)
    }
}
