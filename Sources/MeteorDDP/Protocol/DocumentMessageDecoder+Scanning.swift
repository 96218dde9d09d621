import EJSON
import Foundation

// The decoder's byte-level reading: field names and strings written into the packed scratch, numbers, and the
// scanning primitives the message and value readers in DocumentMessageDecoder.swift are built from.
extension DocumentMessageDecoder {
    // MARK: - Strings

    /// Writes a field name (varint length, bytes) and returns where its bytes are, with their hash; `nil` for a
    /// malformed name, one starting with `$` (decoded: `"\u0024date"` is `$date` too), or one with a non-ASCII
    /// character (see the type's discussion).
    mutating func writeName() -> NameStack.Name? {
        let start = out.count
        guard writeString() else { return nil }
        var reader = PackedFieldsReader(base: UnsafeRawPointer(out.base), offset: start)
        let count = Int(reader.varint())
        let name = UnsafeRawBufferPointer(start: out.base + reader.offset, count: count)
        guard name.first != UInt8(ascii: "$") else { return nil }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var bits: UInt8 = 0
        for byte in name {
            bits |= byte
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        guard bits < 0x80 else { return nil }
        return NameStack.Name(offset: reader.offset, count: count, hash: hash)
    }

    /// Writes the string at `index` (at its opening quote) as a varint length and its UTF-8 bytes.
    mutating func writeString() -> Bool {
        index += 1
        let start = index
        // Eight bytes at a time to the first quote, backslash or control character; the loop below reads that byte
        // (and, near the frame's end, the last few bytes one at a time).
        if let base = bytes.baseAddress {
            while index &+ 8 <= bytes.count {
                let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
                let offset = Self.firstStringSpecialByte(word)
                index &+= offset
                if offset < 8 { break }
            }
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let count = index - start
                out.varint(UInt64(count))
                out.bytes(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[start..<index])))
                index += 1
                return true
            }
            if byte == UInt8(ascii: "\\") { return writeEscapedString(from: start) }
            if byte < 0x20 { return false }
            index += 1
        }
        return false
    }

    /// Where the first byte of `word` (little-endian: its lowest byte first) that is `"`, `\\` or below 0x20 is, 0 to
    /// 7; 8 if none is. SWAR: a byte equal to `c` is a zero byte of `word ^ c`, and `(x - 0x01…) & ~x & 0x80…` flags
    /// the zero bytes of `x` (with 0x20… in place of 0x01…, the bytes below 0x20). A borrow can flag a byte above a
    /// flagged one, never below it, so the lowest flag is exact. Bytes of 0x80 and above (UTF-8 sequences) never count.
    @inline(__always)
    static func firstStringSpecialByte(_ word: UInt64) -> Int {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let special = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word)
        return (special & (ones &* 0x80)).trailingZeroBitCount >> 3
    }

    /// A string with escapes: decoded into a buffer, then written; a lone surrogate, a bad escape or a control
    /// character takes the general path (an error there).
    mutating func writeEscapedString(from start: Int) -> Bool {
        guard let (buffer, _) = try? JSONScanning.escapedString(bytes, from: start, at: &index) else { return false }
        out.varint(UInt64(buffer.count))
        buffer.withUnsafeBytes { out.bytes($0) }
        return true
    }

    // MARK: - Numbers

    /// A JSON number, read as the general parser reads it; `nil` when it is malformed or beyond a double's range.
    mutating func number() -> Double? {
        try? JSONScanning.number(bytes, at: &index)
    }

    // MARK: - Scanning

    @inline(__always)
    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    @inline(__always)
    func peek(_ offset: Int = 0) -> UInt8? {
        index + offset < bytes.count ? bytes[index + offset] : nil
    }

    /// Consumes `byte` if it is next.
    @inline(__always)
    mutating func take(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    mutating func literal(_ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard bytes.count - index >= count, memcmp(bytes.baseAddress! + index, text.utf8Start, count) == 0 else {
            return false
        }
        index += count
        return true
    }
}
