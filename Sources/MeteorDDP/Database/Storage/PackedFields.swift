import EJSON
import Foundation

/// The compact binary form in which the cache keeps a document's fields: one contiguous run of bytes per document,
/// with no object references inside it.
///
/// A cache of EJSON trees spends most of its memory and time on the trees themselves (a 32-byte value per field, a
/// heap string per long string, two arrays and a hash table per object) and on retaining and releasing every node when
/// a document is copied or freed. Packed, a document is a single allocation about the size of its JSON, copied and
/// freed in one step, and a change to two fields is a byte-level patch.
///
/// Layout of the fields, in order: `name length (varint) · name (UTF-8) · value`. A value is a tag byte and its
/// payload:
///
/// | tag | payload |
/// |---|---|
/// | null, false, true | none |
/// | double | 8 bytes (IEEE-754, little-endian) |
/// | integer | zig-zag varint (numbers with an exact integer value up to 2^53, except -0) |
/// | string, binary | varint byte count · bytes |
/// | array | UInt32 byte count of the rest · varint element count · values |
/// | object | UInt32 byte count of the rest · varint field count · fields |
/// | date | 8 bytes (milliseconds, IEEE-754) |
/// | custom | UInt32 byte count of the rest · varint type length · type · value |
///
/// Numbers, dates and NaN are written in one canonical form, so equal scalars have equal bytes; only object key order
/// and `-0` can make equal values differ byte-wise, which ``PackedFields/valuesEqual(_:_:)`` handles.
enum PackedFields {
    // swift-format-ignore: OneCasePerLine
    enum Tag: UInt8 {
        case null = 0, `false`, `true`, double, integer, string, array, object, date, binary, custom
        /// Two strings: the pattern, then the normalised flags (so equal expressions have equal bytes).
        case regularExpression
    }

    /// The largest magnitude written as an integer: every integer up to it is exact in a double.
    static let maximumExactInteger = 9_007_199_254_740_992.0

    // MARK: - Sizes

    static func varintSize(_ value: UInt64) -> Int {
        var value = value
        var size = 1
        while value >= 0x80 {
            value >>= 7
            size += 1
        }
        return size
    }

    static func zigzag(_ value: Int64) -> UInt64 { UInt64(bitPattern: (value << 1) ^ (value >> 63)) }
    static func unzigzag(_ value: UInt64) -> Int64 { Int64(bitPattern: value >> 1) ^ -Int64(bitPattern: value & 1) }

    /// The integer a number is written as, if it is written as one.
    @inline(__always)
    static func exactInteger(_ number: Double) -> Int64? {
        guard number.rounded(.towardZero) == number, abs(number) <= maximumExactInteger else { return nil }
        if number == 0 && number.sign == .minus { return nil }
        return Int64(number)
    }
}

// MARK: - Writing

/// Packing EJSON fields (``Document/init(id:fields:)``): written in one pass into a buffer that grows as needed,
/// then copied once into the document's storage.
extension PackedScratch {
    mutating func string(_ string: String) {
        var string = string
        string.withUTF8 { utf8 in
            varint(UInt64(utf8.count))
            bytes(UnsafeRawBufferPointer(utf8))
        }
    }

    mutating func field(name: String, value: EJSONValue) {
        string(name)
        self.value(value)
    }

    mutating func value(_ value: EJSONValue) {
        switch value {
        case .null: byte(PackedFields.Tag.null.rawValue)
        case .bool(let flag): byte(flag ? PackedFields.Tag.true.rawValue : PackedFields.Tag.false.rawValue)
        case .number(let number):
            if let integer = PackedFields.exactInteger(number) {
                byte(PackedFields.Tag.integer.rawValue)
                varint(PackedFields.zigzag(integer))
            } else {
                byte(PackedFields.Tag.double.rawValue)
                double(number.isNaN ? .nan : number)
            }
        case .date(let milliseconds):
            byte(PackedFields.Tag.date.rawValue)
            double(milliseconds.isNaN ? .nan : (milliseconds == 0 ? 0 : milliseconds))
        case .string(let string):
            byte(PackedFields.Tag.string.rawValue)
            self.string(string)
        case .binary(let data):
            byte(PackedFields.Tag.binary.rawValue)
            varint(UInt64(data.count))
            data.withUnsafeBytes { bytes($0) }
        case .array(let elements):
            let start = beginContainer(.array)
            varint(UInt64(elements.count))
            for element in elements { self.value(element) }
            patchLength(at: start)
        case .object(let object):
            let start = beginContainer(.object)
            varint(UInt64(object.count))
            for (name, value) in object { field(name: name, value: value) }
            patchLength(at: start)
        case .custom(let type, let inner):
            let start = beginContainer(.custom)
            string(type)
            self.value(inner)
            patchLength(at: start)
        case .regularExpression(let pattern, let flags):
            byte(PackedFields.Tag.regularExpression.rawValue)
            string(pattern)
            string(EJSONValue.normalizedRegularExpressionFlags(flags))
        }
    }
}

/// Writes packed fields into memory sized beforehand (a document's storage, made for bytes already packed or for a
/// known change of them).
struct PackedFieldsWriter {
    let base: UnsafeMutableRawPointer
    private(set) var offset: Int

    init(base: UnsafeMutableRawPointer, offset: Int = 0) {
        self.base = base
        self.offset = offset
    }

    @inline(__always)
    mutating func byte(_ value: UInt8) {
        base.storeBytes(of: value, toByteOffset: offset, as: UInt8.self)
        offset += 1
    }

    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            byte(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        byte(UInt8(value))
    }

    mutating func bytes(_ source: UnsafeRawBufferPointer) {
        guard let address = source.baseAddress, source.count > 0 else { return }
        (base + offset).copyMemory(from: address, byteCount: source.count)
        offset += source.count
    }
}

// MARK: - Reading

/// Reads packed fields. The bytes were written by this process (or checked when read from a file), so they are trusted.
struct PackedFieldsReader {
    let base: UnsafeRawPointer
    var offset: Int

    init(base: UnsafeRawPointer, offset: Int = 0) {
        self.base = base
        self.offset = offset
    }

    @inline(__always)
    mutating func byte() -> UInt8 {
        defer { offset += 1 }
        return base.load(fromByteOffset: offset, as: UInt8.self)
    }

    mutating func varint() -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let next = byte()
            result |= UInt64(next & 0x7F) << shift
            if next < 0x80 { return result }
            shift += 7
        }
    }

    mutating func double() -> Double {
        defer { offset += 8 }
        return Double(bitPattern: UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
    }

    mutating func uint32() -> Int {
        defer { offset += 4 }
        return Int(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
    }

    /// A length-prefixed run of bytes (a name or a string), skipped.
    mutating func span() -> UnsafeRawBufferPointer {
        let count = Int(varint())
        defer { offset += count }
        return UnsafeRawBufferPointer(start: base + offset, count: count)
    }

    mutating func string() -> String {
        String(decoding: span(), as: UTF8.self)
    }

    /// Skips one value (tag included).
    mutating func skipValue() {
        switch PackedFields.Tag(rawValue: byte())! {
        case .null, .false, .true: break
        case .double, .date: offset += 8
        case .integer: _ = varint()
        case .string, .binary: _ = span()
        case .regularExpression:
            _ = span()
            _ = span()
        case .array, .object, .custom: offset += uint32()
        }
    }

    /// Skips one value and returns its packed bytes (tag included).
    mutating func valueSpan() -> UnsafeRawBufferPointer {
        let start = offset
        skipValue()
        return UnsafeRawBufferPointer(start: base + start, count: offset - start)
    }

    /// Reads one value (tag included).
    mutating func value() -> EJSONValue {
        switch PackedFields.Tag(rawValue: byte())! {
        case .null: return .null
        case .false: return .bool(false)
        case .true: return .bool(true)
        case .double: return .number(double())
        case .integer: return .number(Double(PackedFields.unzigzag(varint())))
        case .date: return .date(millisecondsSince1970: double())
        case .string: return .string(string())
        case .binary: return .binary(Data(span()))
        case .array:
            offset += 4
            let count = Int(varint())
            var elements: [EJSONValue] = []
            elements.reserveCapacity(count)
            for _ in 0..<count { elements.append(value()) }
            return .array(elements)
        case .object:
            offset += 4
            return .object(object(count: Int(varint())))
        case .custom:
            offset += 4
            let type = string()
            return .custom(type: type, value: value())
        case .regularExpression:
            let pattern = string()
            return .regularExpression(pattern: pattern, flags: string())
        }
    }

    /// Reads `count` fields into an object.
    mutating func object(count: Int) -> EJSONObject {
        var object = EJSONObject(minimumCapacity: count)
        for _ in 0..<count {
            let name = string()
            object[name] = value()
        }
        return object
    }
}

extension PackedFields {
    /// Whether two runs of bytes are identical.
    @inline(__always)
    static func bytesEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        // Names and small values are compared here, without a call.
        if a.count <= 16 {
            for index in 0..<a.count where a[index] != b[index] { return false }
            return true
        }
        return memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0
    }

    /// Compares two packed field lists of `count` fields that name their fields in the same order, field by field:
    /// `true` or `false` if they do, `nil` as soon as a name differs (the lists must then be compared by name).
    static func fieldsEqualInOrder(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer, count: Int) -> Bool? {
        guard let baseA = a.baseAddress, let baseB = b.baseAddress else { return count == 0 }
        var readerA = PackedFieldsReader(base: baseA)
        var readerB = PackedFieldsReader(base: baseB)
        for _ in 0..<count {
            guard bytesEqual(readerA.span(), readerB.span()) else { return nil }
            if !valuesEqual(readerA.valueSpan(), readerB.valueSpan()) { return false }
        }
        return true
    }

    /// Whether two packed values (each starting at its tag) are equal as ``EJSONValue``s: byte-equal values are, and
    /// values that differ byte-wise are compared by meaning only where bytes can differ for equal values (numbers,
    /// containers whose objects may list keys in another order).
    static func valuesEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        if bytesEqual(a, b) { return true }
        guard let tagA = a.first.flatMap(Tag.init(rawValue:)), let tagB = b.first.flatMap(Tag.init(rawValue:)) else {
            return false
        }
        switch (tagA, tagB) {
        case (.double, .double), (.double, .integer), (.integer, .double):
            var readerA = PackedFieldsReader(base: a.baseAddress!)
            var readerB = PackedFieldsReader(base: b.baseAddress!)
            return readerA.value() == readerB.value()
        case (.object, .object), (.array, .array), (.custom, .custom):
            var readerA = PackedFieldsReader(base: a.baseAddress!)
            var readerB = PackedFieldsReader(base: b.baseAddress!)
            return readerA.value() == readerB.value()
        default:
            return false
        }
    }
}
