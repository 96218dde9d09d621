import Foundation

/// Writes EJSON as Meteor's `EJSON.stringify` does, straight into UTF-8 bytes.
struct EJSONWriter {
    private(set) var bytes: [UInt8] = []
    let canonical: Bool
    let indent: String?
    private var level = 0

    init(canonical: Bool, indent: String?) {
        self.canonical = canonical
        self.indent = indent
        bytes.reserveCapacity(256)
    }

    var string: String { String(decoding: bytes, as: UTF8.self) }

    mutating func write(_ value: EJSONValue) {
        switch value {
        case .null: bytes += [0x6E, 0x75, 0x6C, 0x6C]
        case .bool(true): bytes += [0x74, 0x72, 0x75, 0x65]
        case .bool(false): bytes += [0x66, 0x61, 0x6C, 0x73, 0x65]
        case .number(let n):
            if n.isFinite {
                JSNumberFormatter.append(n, to: &bytes)
            } else {
                writeSingleKeyObject("$InfNaN", .number(n.isNaN ? 0 : n > 0 ? 1 : -1))
            }
        case .string(let s): writeString(s)
        case .array(let elements): writeArray(elements)
        case .object(let object):
            if EJSONTypes.needsEscape(object) {
                writeSingleKeyObject("$escape", .object(object), escapeInner: false)
            } else {
                writeObject(object)
            }
        case .date(let ms): writeSingleKeyObject("$date", .number(ms))
        case .binary(let data): writeSingleKeyObject("$binary", .string(data.base64EncodedString()))
        case .custom(let type, let payload):
            var object = EJSONObject()
            object["$type"] = .string(type)
            object["$value"] = payload
            writeObject(object)
        case .regularExpression(let pattern, let flags):
            var object = EJSONObject()
            object["$regexp"] = .string(pattern)
            object["$flags"] = .string(EJSONValue.normalizedRegularExpressionFlags(flags))
            writeObject(object)
        }
    }

    private mutating func writeSingleKeyObject(_ key: String, _ value: EJSONValue, escapeInner: Bool = true) {
        var object = EJSONObject()
        if escapeInner {
            object[key] = value
            writeObject(object)
        } else if case .object(let inner) = value {
            // {"$escape": {...}}: the inner object is written as a plain object, never escaped again.
            writeObjectEntries([(key, nil)]) { writer in writer.writeObject(inner) }
        }
    }

    // MARK: - Containers

    private mutating func writeArray(_ elements: [EJSONValue]) {
        bytes.append(UInt8(ascii: "["))
        if elements.isEmpty {
            bytes.append(UInt8(ascii: "]"))
            return
        }
        level += 1
        for (position, element) in elements.enumerated() {
            if position > 0 { bytes.append(UInt8(ascii: ",")) }
            newline()
            write(element)
        }
        level -= 1
        newline()
        bytes.append(UInt8(ascii: "]"))
    }

    private mutating func writeObject(_ object: EJSONObject) {
        let keys = orderedKeys(object)
        bytes.append(UInt8(ascii: "{"))
        if keys.isEmpty {
            bytes.append(UInt8(ascii: "}"))
            return
        }
        level += 1
        for (position, key) in keys.enumerated() {
            if position > 0 { bytes.append(UInt8(ascii: ",")) }
            newline()
            writeString(key)
            bytes.append(UInt8(ascii: ":"))
            if indent != nil { bytes.append(UInt8(ascii: " ")) }
            write(object[key]!)
        }
        level -= 1
        newline()
        bytes.append(UInt8(ascii: "}"))
    }

    /// `{"key": <body>}` where the writer of the value is given.
    private mutating func writeObjectEntries(_ entries: [(String, EJSONValue?)], body: (inout EJSONWriter) -> Void) {
        bytes.append(UInt8(ascii: "{"))
        level += 1
        newline()
        writeString(entries[0].0)
        bytes.append(UInt8(ascii: ":"))
        if indent != nil { bytes.append(UInt8(ascii: " ")) }
        body(&self)
        level -= 1
        newline()
        bytes.append(UInt8(ascii: "}"))
    }

    private mutating func newline() {
        guard let indent else { return }
        bytes.append(0x0A)
        for _ in 0..<level { bytes += Array(indent.utf8) }
    }

    /// JavaScript's own-property order (array-index keys first, ascending; then insertion order),
    /// or UTF-16 code unit order when canonical.
    private func orderedKeys(_ object: EJSONObject) -> [String] {
        if canonical {
            return object.keys.sorted { $0.utf16.lexicographicallyPrecedes($1.utf16) }
        }
        guard object.keys.contains(where: { Self.arrayIndex($0) != nil }) else { return Array(object.keys) }
        let indexed = object.keys.compactMap { key in Self.arrayIndex(key).map { (key, $0) } }.sorted { $0.1 < $1.1 }
            .map(\.0)
        return indexed + object.keys.filter { Self.arrayIndex($0) == nil }
    }

    /// The value of a key that JavaScript treats as an array index ("0", "10"; not "01", "-1", or ≥ 2³² − 1).
    static func arrayIndex(_ key: String) -> UInt32? {
        let utf8 = key.utf8
        guard let first = utf8.first, first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9"), utf8.count <= 10 else {
            return nil
        }
        if first == UInt8(ascii: "0") && utf8.count > 1 { return nil }
        var value: UInt64 = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + UInt64(byte - UInt8(ascii: "0"))
        }
        return value < 4_294_967_295 ? UInt32(value) : nil
    }

    // MARK: - Strings

    private mutating func writeString(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            var runStart = 0
            for (position, byte) in utf8.enumerated() where byte < 0x20 || byte == 0x22 || byte == 0x5C {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<position]))
                runStart = position + 1
                switch byte {
                case 0x22: bytes += [0x5C, 0x22]
                case 0x5C: bytes += [0x5C, 0x5C]
                case 0x08: bytes += [0x5C, UInt8(ascii: "b")]
                case 0x0C: bytes += [0x5C, UInt8(ascii: "f")]
                case 0x0A: bytes += [0x5C, UInt8(ascii: "n")]
                case 0x0D: bytes += [0x5C, UInt8(ascii: "r")]
                case 0x09: bytes += [0x5C, UInt8(ascii: "t")]
                default:
                    let hex = Array("0123456789abcdef".utf8)
                    bytes += [
                        0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)],
                        hex[Int(byte & 0xF)]
                    ]
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
