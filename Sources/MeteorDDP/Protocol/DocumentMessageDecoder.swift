import Atomics
import EJSON
import Foundation

/// Decodes `added` and `changed` frames straight from their UTF-8 bytes into packed fields (``PackedFields``), the
/// form the cache keeps documents in: no `EJSONValue` tree, no `EJSONObject`, one allocation per document.
///
/// It takes exactly the frames whose meaning it can produce byte for byte as the general path would (EJSON.parse,
/// then ``ServerMessage``, then packing): frames Meteor's server writes (`{"msg":"added",…`), with plain JSON values
/// and `{"$date": n}`. For anything else it returns `nil` and the frame goes to the general parser, which then
/// reports exactly the error it always reported: other EJSON types (`$binary`, `$type`, `$escape`, …; any `$` key),
/// duplicate keys, field names with non-ASCII characters (Swift's `String` equality, which the general parser's objects
/// use, merges canonically equivalent names: `"K"` and `"\u212a"`), keys with escapes at the top level, objects of
/// more than ``maximumFieldsPerObject`` fields, nesting deeper than ``maximumDepth``, numbers beyond a double's range,
/// lone surrogates, unknown top-level keys, and every malformed frame. The input is valid UTF-8 (a Swift string's
/// bytes), so it is not validated again.
struct DocumentMessageDecoder {
    /// Deeper frames take the general path (which rejects them past `EJSON.maximumNestingDepth`).
    static let maximumDepth = 256
    /// Objects with more fields take the general path (duplicate keys are looked for by a linear scan of hashes).
    static let maximumFieldsPerObject = 128

    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    private var depth = 0
    var out: PackedScratch
    /// The names of the objects being written, innermost last.
    var names: NameStack
    /// Where the connection's last collection name is kept (alive for the whole decode: the caller holds it;
    /// unowned(unsafe) keeps the decoder trivially copyable, with no retain and release per frame).
    private unowned(unsafe) let scratch: Scratch

    private init(bytes: UnsafeBufferPointer<UInt8>, scratch: Scratch) {
        self.bytes = bytes
        self.out = scratch.packed
        self.names = scratch.names
        self.scratch = scratch
        out.count = 0
        names.count = 0
    }

    /// Memory a decoder writes into, kept from one frame to the next by whoever decodes a connection's frames, so that
    /// decoding a frame allocates only the document it makes. A transport delivers a connection's events one at a
    /// time; should two decodes overlap anyway, the second works in memory of its own
    /// (``decode(_:scratch:)-(String,_)`` claims the scratch with an atomic flag).
    final class Scratch: @unchecked Sendable {
        // @unchecked because `packed` and `names` are used only by the decode that claimed `inUse`.
        fileprivate(set) var packed = PackedScratch(capacity: Scratch.initialBytes)
        fileprivate(set) var names = NameStack()
        /// The last frame's collection name, reused while the next frames name it (used only by the claiming decode).
        fileprivate var lastCollection: RecentName?
        private let inUse = ManagedAtomic(false)
        /// What a scratch keeps between frames; a larger frame's memory is given back after it.
        static let initialBytes = 1024 // a connection each: many clients in one process keep theirs small
        static let keptBytes = 1 << 20

        init() {}

        deinit {
            packed.deallocate()
            names.deallocate()
        }

        /// Claims the scratch; `false` if a decode is using it.
        fileprivate func claim() -> Bool {
            inUse.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged
        }

        /// Takes back the buffers (moved if they grew), shrunk if a large frame grew them, and lets the scratch go.
        fileprivate func giveBack(_ packed: PackedScratch, _ names: NameStack) {
            self.packed = packed
            self.names = names
            if packed.capacity > Self.keptBytes {
                self.packed.deallocate()
                self.packed = PackedScratch(capacity: Self.initialBytes)
            }
            if names.capacity > 1024 {
                self.names.deallocate()
                self.names = NameStack()
            }
            inUse.store(false, ordering: .releasing)
        }
    }

    /// The frame's `added` or `changed` message, packed; `nil` for every other frame and everything the fast path does
    /// not take (see the type's discussion). `scratch` is kept across frames when given (one decode at a time).
    static func decode(_ frame: String, scratch: Scratch = Scratch()) -> DocumentMessage? {
        var frame = frame
        return frame.withUTF8 { decode($0, scratch: scratch) }
    }

    /// See ``decode(_:scratch:)-(String,_)``; `bytes` must be valid UTF-8.
    static func decode(_ bytes: UnsafeBufferPointer<UInt8>, scratch: Scratch = Scratch()) -> DocumentMessage? {
        guard startsLikeADataMessage(bytes) else { return nil }
        // Two decodes at once (a transport breaking its contract): the second one gets memory of its own.
        guard scratch.claim() else { return decode(bytes, scratch: Scratch()) }
        var decoder = DocumentMessageDecoder(bytes: bytes, scratch: scratch)
        let message = decoder.message() // the buffers may have grown (moved): they go back to the scratch
        scratch.giveBack(decoder.out, decoder.names)
        return message
    }

    /// Meteor's server writes `msg` first: a frame that does not start `{"msg":"added"` or `{"msg":"changed"` goes to
    /// the general parser without a second look.
    private static func startsLikeADataMessage(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let added: StaticString = #"{"msg":"added""#
        let changed: StaticString = #"{"msg":"changed""#
        return hasPrefix(bytes, added) || hasPrefix(bytes, changed)
    }

    private static func hasPrefix(_ bytes: UnsafeBufferPointer<UInt8>, _ prefix: StaticString) -> Bool {
        let count = prefix.utf8CodeUnitCount
        guard bytes.count >= count, let base = bytes.baseAddress else { return false }
        return memcmp(base, prefix.utf8Start, count) == 0
    }

    // MARK: - The message

    @inline(__always)
    private mutating func message() -> DocumentMessage? {
        guard take(UInt8(ascii: "{")) else { return nil }
        var kind: DocumentMessage.Kind?
        var collection: String?
        var wireID: String?
        var fieldCount: Int?
        var fieldsEnd = 0
        var cleared: [String]?
        while true {
            skipWhitespace()
            guard let key = plainKey(), take(UInt8(ascii: ":")) else { return nil }
            skipWhitespace()
            switch key {
            case .msg:
                // Compared as bytes (decoded: escapes count): no `String` is made.
                guard kind == nil, let (start, name) = stringValueBytes() else { return nil }
                if Self.equal(name, "added" as StaticString) {
                    kind = .added
                } else if Self.equal(name, "changed" as StaticString) {
                    kind = .changed
                } else {
                    return nil
                }
                out.count = start
            case .collection:
                guard collection == nil, let (start, name) = stringValueBytes() else { return nil }
                // A connection's frames name a handful of collections: the last name's `String` is reused while
                // frames repeat it (no allocation, no UTF-8 validation of the same bytes again).
                if let last = scratch.lastCollection, last.matches(name) {
                    collection = last.name
                } else {
                    let made = String(decoding: name, as: UTF8.self)
                    scratch.lastCollection = RecentName(name, made)
                    collection = made
                }
                out.count = start
            case .id:
                guard wireID == nil, let id = stringValue() else { return nil }
                wireID = id
            case .fields:
                guard fieldCount == nil else { return nil }
                if literal("null") {
                    fieldCount = 0
                } else {
                    guard peek() == UInt8(ascii: "{"), let count = objectFields() else { return nil }
                    fieldCount = count
                }
                fieldsEnd = out.count
            case .cleared:
                guard cleared == nil else { return nil }
                if literal("null") {
                    cleared = []
                } else {
                    guard let names = stringArray() else { return nil }
                    cleared = names
                }
            }
            skipWhitespace()
            if take(UInt8(ascii: ",")) { continue }
            guard take(UInt8(ascii: "}")) else { return nil }
            break
        }
        skipWhitespace()
        guard index == bytes.count, let kind, let collection, let wireID else { return nil }
        let escaped = wireID.utf8.first == UInt8(ascii: "-") // only an id escaped with `-` stands for another
        let documentID = escaped ? MongoID.documentID(fromWire: wireID) : wireID
        let fields = Document(
            id: documentID, fieldCount: fieldCount ?? 0,
            packedFields: UnsafeRawBufferPointer(start: out.base, count: fieldsEnd)
        )
        return DocumentMessage(
            kind: kind, key: DocumentKey(collectionName: collection, documentID: documentID),
            escapedWireID: escaped && documentID != wireID ? wireID : nil, fields: fields,
            cleared: kind == .added ? [] : cleared ?? [])
    }

    private enum TopLevelKey {
        case msg, collection, id, fields, cleared
    }

    /// A top-level key without escapes that the message reads; `nil` for any other.
    private mutating func plainKey() -> TopLevelKey? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
            guard bytes[index] != UInt8(ascii: "\\") else { return nil }
            index += 1
        }
        guard index < bytes.count else { return nil }
        let key = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        index += 1
        skipWhitespace()
        switch key.count {
        case 2 where Self.equal(key, "id"): return .id
        case 3 where Self.equal(key, "msg"): return .msg
        case 6 where Self.equal(key, "fields"): return .fields
        case 7 where Self.equal(key, "cleared"): return .cleared
        case 10 where Self.equal(key, "collection"): return .collection
        default: return nil
        }
    }

    private static func equal(_ bytes: UnsafeRawBufferPointer, _ literal: StaticString) -> Bool {
        bytes.count == literal.utf8CodeUnitCount && memcmp(bytes.baseAddress!, literal.utf8Start, bytes.count) == 0
    }

    /// Writes the string value at `index` (escapes decoded) to the scratch and returns where it starts there and its
    /// UTF-8 bytes (valid until the scratch is written again; the caller drops them with `out.count = start`); `nil`
    /// for anything but a well-formed string.
    private mutating func stringValueBytes() -> (Int, UnsafeRawBufferPointer)? {
        let start = out.count
        guard peek() == UInt8(ascii: "\""), writeString() else { return nil }
        var reader = PackedFieldsReader(base: UnsafeRawPointer(out.base), offset: start)
        let count = Int(reader.varint())
        return (start, UnsafeRawBufferPointer(start: out.base + reader.offset, count: count))
    }

    /// A string value as a `String`.
    private mutating func stringValue() -> String? {
        guard let (start, bytes) = stringValueBytes() else { return nil }
        let string = String(decoding: bytes, as: UTF8.self)
        out.count = start
        return string
    }

    /// `cleared`: an array of strings.
    private mutating func stringArray() -> [String]? {
        guard take(UInt8(ascii: "[")) else { return nil }
        var strings: [String] = []
        skipWhitespace()
        if take(UInt8(ascii: "]")) { return strings }
        while true {
            skipWhitespace()
            guard let string = stringValue() else { return nil }
            strings.append(string)
            skipWhitespace()
            if take(UInt8(ascii: ",")) { continue }
            guard take(UInt8(ascii: "]")) else { return nil }
            return strings
        }
    }

    // MARK: - Values

    /// Writes one value, tag first.
    private mutating func value() -> Bool {
        guard index < bytes.count else { return false }
        switch bytes[index] {
        case UInt8(ascii: "\""):
            out.byte(PackedFields.Tag.string.rawValue)
            return writeString()
        case UInt8(ascii: "{"): return object()
        case UInt8(ascii: "["): return array()
        case UInt8(ascii: "t"):
            guard literal("true") else { return false }
            out.byte(PackedFields.Tag.true.rawValue)
        case UInt8(ascii: "f"):
            guard literal("false") else { return false }
            out.byte(PackedFields.Tag.false.rawValue)
        case UInt8(ascii: "n"):
            guard literal("null") else { return false }
            out.byte(PackedFields.Tag.null.rawValue)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            guard let number = number() else { return false }
            if let integer = PackedFields.exactInteger(number) {
                out.byte(PackedFields.Tag.integer.rawValue)
                out.varint(PackedFields.zigzag(integer))
            } else {
                out.byte(PackedFields.Tag.double.rawValue)
                out.double(number)
            }
        default: return false
        }
        return true
    }

    /// An object value: `{"$date": n}` becomes a date; any other object with a `$` key takes the general path.
    private mutating func object() -> Bool {
        if let date = dateObject() {
            out.byte(PackedFields.Tag.date.rawValue)
            out.double(date)
            return true
        }
        out.byte(PackedFields.Tag.object.rawValue)
        let lengthPosition = out.reserve(4)
        guard let count = objectFields(countFirst: true) else { return false }
        out.patchLength(at: lengthPosition)
        _ = count
        return true
    }

    /// `{"$date": number}` (and nothing else), read ahead without writing; the milliseconds as the general path
    /// keeps them (whole milliseconds, toward zero).
    private mutating func dateObject() -> Double? {
        let literal: StaticString = #"{"$date":"#
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index > count, memcmp(bytes.baseAddress! + index, literal.utf8Start, count) == 0 else {
            return nil
        }
        let start = index
        index += count
        skipWhitespace()
        if index < bytes.count,
            bytes[index] == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]),
            let milliseconds = number()
        {
            skipWhitespace()
            if take(UInt8(ascii: "}")) {
                return milliseconds.rounded(.towardZero) == 0 ? 0 : milliseconds.rounded(.towardZero)
            }
        }
        index = start
        return nil
    }

    /// The fields of an object at `index` (which is at its `{`), written as packed fields (names and values); with
    /// `countFirst`, preceded by their count (as inside a container value). Returns the field count.
    private mutating func objectFields(countFirst: Bool = false) -> Int? {
        guard take(UInt8(ascii: "{")), enter() else { return nil }
        let countPosition = countFirst ? out.reserve(1) : 0
        let namesBase = names.count
        var count = 0
        skipWhitespace()
        if !take(UInt8(ascii: "}")) {
            while true {
                skipWhitespace()
                guard peek() == UInt8(ascii: "\"") else { return nil }
                guard let name = writeName(), count < Self.maximumFieldsPerObject,
                    names.push(name, in: out, from: namesBase)
                else { return nil }
                skipWhitespace()
                guard take(UInt8(ascii: ":")) else { return nil }
                skipWhitespace()
                guard value() else { return nil }
                count += 1
                skipWhitespace()
                if take(UInt8(ascii: ",")) { continue }
                guard take(UInt8(ascii: "}")) else { return nil }
                break
            }
        }
        names.count = namesBase
        if countFirst { out.insertVarint(UInt64(count), at: countPosition) }
        depth -= 1
        return count
    }

    private mutating func array() -> Bool {
        guard take(UInt8(ascii: "[")), enter() else { return false }
        out.byte(PackedFields.Tag.array.rawValue)
        let lengthPosition = out.reserve(4)
        let countPosition = out.reserve(1)
        var count = 0
        skipWhitespace()
        if !take(UInt8(ascii: "]")) {
            while true {
                skipWhitespace()
                guard value() else { return false }
                count += 1
                skipWhitespace()
                if take(UInt8(ascii: ",")) { continue }
                guard take(UInt8(ascii: "]")) else { return false }
                break
            }
        }
        out.insertVarint(UInt64(count), at: countPosition)
        out.patchLength(at: lengthPosition)
        depth -= 1
        return true
    }

    private mutating func enter() -> Bool {
        depth += 1
        return depth <= Self.maximumDepth
    }
}
