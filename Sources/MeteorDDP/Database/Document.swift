import EJSON
import Foundation

/// A document of the local cache: an immutable value, its id and its fields (without `_id`).
///
/// For example:
/// ```swift
/// if let player = client.database.document(DocumentKey(collectionName: "players", documentID: "lovelace")) {
///     print(player["name"]?.stringValue ?? "")
/// }
/// ```
///
/// The fields are kept packed (see `PackedFields`): one allocation about the size of the document's JSON, which
/// makes documents cheap to keep, copy and compare. ``subscript(_:)`` and ``value(at:)`` decode only the field they
/// read; ``fields`` decodes them all.
public struct Document: @unchecked Sendable, Equatable, Identifiable, CustomStringConvertible {
    // @unchecked because `storage` (a ManagedBuffer, never Sendable itself) is written once, before the document
    // exists, and only read afterwards.

    struct Header {
        let fieldCount: Int
        /// The packed fields' size; they follow the id's UTF-8 bytes.
        let byteCount: Int
        let idByteCount: Int
        /// Where the document stands in its collection's arrival order (see ``arrival``); 0 until the cache first
        /// stores this version, then never written again.
        var arrival: UInt64
    }

    /// The id's UTF-8 bytes and the packed fields in one allocation, without a `String` of its own: looking a
    /// document up compares the id right after the header, on the cache line it reads anyway, and a new version
    /// copies the id's bytes rather than retaining (and one day releasing) a string object elsewhere in memory.
    final class Storage: ManagedBuffer<Header, UInt8> {
        /// Calls `body` with the id's UTF-8 bytes.
        func withIDBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
            try withUnsafeMutablePointers { header, elements in
                try body(UnsafeRawBufferPointer(start: elements, count: header.pointee.idByteCount))
            }
        }

        /// Whether the document's id is `id`.
        func hasID(_ id: String) -> Bool {
            withIDBytes { stored in
                id.utf8.withContiguousStorageIfAvailable { PackedFields.bytesEqual(stored, UnsafeRawBufferPointer($0)) }
                    ?? id.utf8.elementsEqual(stored)
            }
        }
    }

    let storage: Storage

    init(storage: Storage) {
        self.storage = storage
    }

    /// Creates a document.
    public init(id: String, fields: EJSONObject) {
        // One pass over the fields into a growable buffer, then one copy: sizing the document first walked every
        // value twice, and each walk copies (retains and releases) every name and value it visits.
        var scratch = PackedScratch(capacity: Self.packingScratchBytes)
        defer { scratch.deallocate() }
        for (name, value) in fields { scratch.field(name: name, value: value) }
        self.init(
            id: id, fieldCount: fields.count,
            packedFields: UnsafeRawBufferPointer(start: scratch.base, count: scratch.count))
    }

    /// The first size of the buffer ``init(id:fields:)`` packs into (it grows for a larger document).
    static let packingScratchBytes = 1024

    /// A document from packed fields already checked (see `init(id:validatingPackedFields:)`): one copy.
    init(id: String, fieldCount: Int, packedFields: UnsafeRawBufferPointer) {
        var id = id
        self.init(
            storage: id.withUTF8 { idBytes in
                Self.makeStorage(
                    idBytes: UnsafeRawBufferPointer(idBytes), fieldCount: fieldCount, byteCount: packedFields.count
                ) { writer in
                    writer.bytes(packedFields)
                }
            })
    }

    private static func makeStorage(
        idBytes: UnsafeRawBufferPointer, fieldCount: Int, byteCount: Int, arrival: UInt64 = 0,
        write: (inout PackedFieldsWriter) -> Void
    ) -> Storage {
        let buffer = Storage.create(minimumCapacity: byteCount + idBytes.count) { _ in
            Header(fieldCount: fieldCount, byteCount: byteCount, idByteCount: idBytes.count, arrival: arrival)
        }
        buffer.withUnsafeMutablePointerToElements { elements in
            if let idBase = idBytes.baseAddress {
                UnsafeMutableRawPointer(elements).copyMemory(from: idBase, byteCount: idBytes.count)
            }
            var writer = PackedFieldsWriter(base: UnsafeMutableRawPointer(elements + idBytes.count))
            write(&writer)
            precondition(writer.offset == byteCount, "packed document size mismatch")
        }
        return unsafeDowncast(buffer, to: Storage.self)
    }

    // MARK: - Reading

    /// The document's id in the cache (made from the stored UTF-8 bytes on each call): a string `_id` as it is
    /// (with `-` before it if it would read as another kind of id: 24 hex digits, a leading `-` or `~`), an
    /// `ObjectID`'s 24 hex digits, `~` + EJSON for other ids (`MongoID.documentID`). ``idValue`` is the `_id` it
    /// stands for.
    public var id: String { storage.withIDBytes { String(decoding: $0, as: UTF8.self) } }

    // MARK: - Arrival order

    /// Where the document stands in its collection's arrival order: the order in which documents came into the cache
    /// (a server's `added`, a stub's or an app's insert), which minimongo's results follow when no sort is given and
    /// for ties. A new version of a document keeps its place; a document removed and added again goes last. 0 for a
    /// document the cache has not stored.
    var arrival: UInt64 { storage.header.arrival }

    /// This document with the arrival order `arrival`: this very version if it has that place or has none yet (a
    /// version the cache never stored is not shared with any reader: its place is written once, before it is
    /// published), a copy otherwise.
    func placed(at arrival: UInt64) -> Document {
        let current = storage.header.arrival
        if current == arrival { return self }
        if current == 0 {
            storage.header.arrival = arrival
            return self
        }
        return Document(
            storage: withBytes { bytes in
                storage.withIDBytes { idBytes in
                    Self.makeStorage(idBytes: idBytes, fieldCount: fieldCount, byteCount: bytes.count, arrival: arrival)
                    { writer in
                        writer.bytes(bytes)
                    }
                }
            })
    }

    /// Whether this document came into the cache before `other` (by arrival order, then by id for documents not
    /// stored).
    func arrivedBefore(_ other: Document) -> Bool {
        let mine = arrival
        let theirs = other.arrival
        return mine != theirs ? mine < theirs : hasSmallerID(than: other)
    }

    /// Whether this document's id sorts before `other`'s (by code point, which UTF-8's byte order follows).
    func hasSmallerID(than other: Document) -> Bool {
        storage.withIDBytes { mine in
            other.storage.withIDBytes { theirs in
                let common = min(mine.count, theirs.count)
                let order = common == 0 ? 0 : memcmp(mine.baseAddress!, theirs.baseAddress!, common)
                return order != 0 ? order < 0 : mine.count < theirs.count
            }
        }
    }

    /// Whether both documents have the same id.
    func hasSameID(as other: Document) -> Bool {
        storage.withIDBytes { mine in other.storage.withIDBytes { PackedFields.bytesEqual(mine, $0) } }
    }

    /// The number of fields.
    public var fieldCount: Int { storage.header.fieldCount }

    /// The document's fields, in the order the server sent them (decoded on each call).
    public var fields: EJSONObject {
        withBytes { bytes in
            var reader = PackedFieldsReader(base: bytes.baseAddress!)
            return reader.object(count: fieldCount)
        }
    }

    /// The names of the fields, in order.
    public var fieldNames: [String] {
        var names: [String] = []
        names.reserveCapacity(fieldCount)
        forEachField { name, _ in names.append(String(decoding: name, as: UTF8.self)) }
        return names
    }

    /// The field named `name`.
    public subscript(name: String) -> EJSONValue? {
        withValue(named: name) { span in
            guard let span else { return nil }
            var reader = PackedFieldsReader(base: span.baseAddress!)
            return reader.value()
        }
    }

    /// The value at a dotted path (`"location.city"`).
    public func value(at path: String) -> EJSONValue? {
        if path == "_id" { return idValue }
        var components = path.split(separator: ".", omittingEmptySubsequences: false)[...]
        guard let first = components.popFirst() else { return nil }
        var current = self[String(first)]
        for component in components { current = current?[String(component)] }
        return current
    }

    /// The document as one EJSON object with `_id` first (for Codable decoding and the wire).
    public var ejsonValue: EJSONValue {
        var object = EJSONObject(minimumCapacity: fieldCount + 1)
        object["_id"] = idValue
        for (name, value) in fields where name != "_id" { object[name] = value }
        return .object(object)
    }

    /// The document's `_id` as Meteor has it: a string, an `ObjectID` (`.custom(type: "oid", …)`), or another
    /// value, read from ``id`` (`MongoID.parse`).
    public var idValue: EJSONValue {
        let id = id
        return MongoID.parse(id) ?? .string(id)
    }

    /// The document as EJSON text with `_id` first: `{"_id":"lovelace","name":"Ada","score":10}`.
    public var description: String { EJSON.stringify(ejsonValue) }

    /// Whether both are the very same version (one object): an unchanged document keeps its version.
    func isSameVersion(as other: Document) -> Bool {
        storage === other.storage
    }

    public static func == (lhs: Document, rhs: Document) -> Bool {
        lhs.storage === rhs.storage || (lhs.hasSameID(as: rhs) && lhs.hasSameFields(as: rhs))
    }

    /// Whether both are the very same stored version (not merely equal).
    func isIdentical(to other: Document) -> Bool { storage === other.storage }

    // MARK: - Packed access

    /// Calls `body` with the packed fields (SPI for the fuzz target; the format is internal).
    @_spi(Storage)
    public func withBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        try storage.withUnsafeMutablePointers { header, elements in
            try body(
                UnsafeRawBufferPointer(start: elements + header.pointee.idByteCount, count: header.pointee.byteCount))
        }
    }

    /// Calls `body` with each field's name (UTF-8) and value (packed, tag included), in order.
    func forEachField(_ body: (_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Void) rethrows
    {
        _ = try firstField { name, value in
            try body(name, value)
            return false
        }
    }

    /// Calls `body` with the packed value of the field named `name` (`nil`: no such field).
    func withValue<T>(named name: String, _ body: (UnsafeRawBufferPointer?) throws -> T) rethrows -> T {
        var name = name
        return try name.withUTF8 { try withValue(named: UnsafeRawBufferPointer($0), body) }
    }

    /// Calls `body` with the packed value of the field whose UTF-8 name is `name` (`nil`: no such field).
    func withValue<T>(named name: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer?) throws -> T) rethrows -> T {
        try withBytes { _ in try body(firstField { candidate, _ in PackedFields.bytesEqual(candidate, name) }?.value) }
    }

    /// Walks the fields in order until `stop` returns `true` and returns that field (name and packed value). The
    /// spans point into the storage: use them only while the document is alive (inside ``withBytes(_:)``).
    private func firstField(
        where stop: (_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) rethrows -> (name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)? {
        try withBytes { bytes in
            guard let base = bytes.baseAddress else { return nil }
            var reader = PackedFieldsReader(base: base)
            for _ in 0..<fieldCount {
                let name = reader.span()
                let value = reader.valueSpan()
                if try stop(name, value) { return (name, value) }
            }
            return nil
        }
    }

    /// Whether both documents have equal fields (as ``EJSONValue``s: field order is not significant).
    func hasSameFields(as other: Document) -> Bool {
        if storage === other.storage { return true }
        guard fieldCount == other.fieldCount else { return false }
        let lockstep = withBytes { mine in
            other.withBytes { theirs -> Bool? in
                if PackedFields.bytesEqual(mine, theirs) { return true }
                return PackedFields.fieldsEqualInOrder(mine, theirs, count: fieldCount)
            }
        }
        if let lockstep { return lockstep }
        // Same fields in another order: the first field whose value differs (or is missing there) decides.
        let differing = firstField { name, value in
            !other.withValue(named: name) { theirs in theirs.map { PackedFields.valuesEqual(value, $0) } ?? false }
        }
        return differing == nil
    }
}

// MARK: - Changing

extension Document {
    /// This document with `changes` set (existing fields keep their place, new ones are appended in order) and the
    /// fields named in `cleared` removed, as a `changed` message describes it. Unchanged fields are copied byte for
    /// byte. When nothing actually changes (every value set is equal to the one there, nothing cleared was there),
    /// the result is this very document (``isIdentical(to:)``): a new version always differs from the old one.
    func setting(_ changes: EJSONObject, clearing cleared: [String] = []) -> Document {
        setting(Document(id: "", fields: changes), clearing: cleared)
    }

    /// This document with the fields of `changes` (packed: a data message decoded by `DocumentMessageDecoder`, whose
    /// names are unique) set and those named in `cleared` removed; as the `EJSONObject` form above.
    func setting(_ changes: Document, clearing cleared: [String] = []) -> Document {
        changes.withBytes { _ in
            // The changes' names and values are read in place (spans into `changes`, alive for this closure).
            withUnsafeTemporaryAllocation(of: FieldSpan.self, capacity: changes.fieldCount) { spans in
                cleared.withUnsafeBufferPointer { cleared in
                    var count = 0
                    changes.forEachField { name, value in
                        // A field both set and cleared ends up cleared, as when Meteor's store applies `fields` then
                        // `cleared`.
                        if !cleared.isEmpty, Self.index(of: name, in: cleared) != nil { return }
                        spans.initializeElement(at: count, to: FieldSpan(name: name, value: value))
                        count += 1
                    }
                    return setting(UnsafeBufferPointer(rebasing: spans[..<count]), clearing: cleared)
                }
            }
        }
    }

    /// A field's UTF-8 name and packed value (tag included).
    private struct FieldSpan {
        let name: UnsafeRawBufferPointer
        let value: UnsafeRawBufferPointer
    }

    /// An old field that a change replaces or a clear removes: where it sits in the old fields' bytes.
    private struct FieldEdit {
        static let drop = -1
        let fieldStart: Int
        let valueStart: Int
        let fieldEnd: Int
        /// The index of the change whose value replaces the field's, or `drop`.
        let change: Int
    }

    private func setting(_ changes: UnsafeBufferPointer<FieldSpan>, clearing cleared: UnsafeBufferPointer<String>)
        -> Document
    {
        let oldCount = fieldCount
        // Only the old fields a change or a clear names are noted; the runs of fields between them are copied whole
        // (one copy per run, names included), and once every change has found its field and nothing is cleared, the
        // rest of the fields is not even walked: it is the last run.
        return withBytes { old in
            // One edit per old field at most (sized for all of them: a bound that relied on names being unique would be
            // a write past the buffer if they ever were not).
            withUnsafeTemporaryAllocation(of: FieldEdit.self, capacity: oldCount) { edits in
                withUnsafeTemporaryAllocation(of: Bool.self, capacity: changes.count) { replaced in
                    replaced.initialize(repeating: false)
                    var byteCount = old.count
                    var fieldCount = oldCount
                    var structureChanged = false
                    var valuesChanged = false
                    var editCount = 0
                    var matched = 0
                    if let base = old.baseAddress {
                        var reader = PackedFieldsReader(base: base)
                        for _ in 0..<oldCount {
                            if cleared.isEmpty, matched == changes.count { break }
                            let fieldStart = reader.offset
                            let name = reader.span()
                            let valueStart = reader.offset
                            reader.skipValue()
                            let fieldEnd = reader.offset
                            if !cleared.isEmpty, Self.index(of: name, in: cleared) != nil {
                                edits.initializeElement(
                                    at: editCount,
                                    to: FieldEdit(
                                        fieldStart: fieldStart, valueStart: valueStart, fieldEnd: fieldEnd,
                                        change: FieldEdit.drop))
                                editCount += 1
                                byteCount -= fieldEnd - fieldStart
                                fieldCount -= 1
                                structureChanged = true
                                continue
                            }
                            guard let change = Self.index(of: name, in: changes) else { continue }
                            edits.initializeElement(
                                at: editCount,
                                to: FieldEdit(
                                    fieldStart: fieldStart, valueStart: valueStart, fieldEnd: fieldEnd, change: change))
                            editCount += 1
                            replaced[change] = true
                            matched += 1
                            let value = changes[change].value
                            byteCount += value.count - (fieldEnd - valueStart)
                            if !valuesChanged {
                                valuesChanged = !PackedFields.valuesEqual(
                                    value, UnsafeRawBufferPointer(rebasing: old[valueStart..<fieldEnd]))
                            }
                        }
                    }
                    for j in changes.indices where !replaced[j] {
                        let name = changes[j].name
                        byteCount += PackedFields.varintSize(UInt64(name.count)) + name.count + changes[j].value.count
                        fieldCount += 1
                        structureChanged = true
                    }
                    // FieldEdit is trivial: nothing to deinitialise.
                    guard structureChanged || valuesChanged else { return self }
                    return Document(
                        storage: self.storage.withIDBytes { idBytes in
                            Self.makeStorage(
                                idBytes: idBytes, fieldCount: fieldCount, byteCount: byteCount, arrival: arrival
                            ) { writer in
                                var copied = 0
                                for edit in edits[..<editCount] {
                                    // The unchanged fields before this one, then (unless dropped) its name and new
                                    // value.
                                    let keptUntil = edit.change == FieldEdit.drop ? edit.fieldStart : edit.valueStart
                                    writer.bytes(UnsafeRawBufferPointer(rebasing: old[copied..<keptUntil]))
                                    if edit.change != FieldEdit.drop { writer.bytes(changes[edit.change].value) }
                                    copied = edit.fieldEnd
                                }
                                writer.bytes(UnsafeRawBufferPointer(rebasing: old[copied...]))
                                for j in changes.indices where !replaced[j] {
                                    writer.varint(UInt64(changes[j].name.count))
                                    writer.bytes(changes[j].name)
                                    writer.bytes(changes[j].value)
                                }
                            }
                        })
                }
            }
        }
    }

    /// The index of the change named `name` (UTF-8) in `changes`.
    private static func index(of name: UnsafeRawBufferPointer, in changes: UnsafeBufferPointer<FieldSpan>) -> Int? {
        for index in changes.indices where PackedFields.bytesEqual(changes[index].name, name) { return index }
        return nil
    }

    /// The index of the name equal to `name` (UTF-8) in `names`.
    private static func index(of name: UnsafeRawBufferPointer, in names: UnsafeBufferPointer<String>) -> Int? {
        for index in names.indices {
            let utf8 = names[index].utf8
            guard utf8.count == name.count else { continue }
            let found =
                utf8.withContiguousStorageIfAvailable { PackedFields.bytesEqual(name, UnsafeRawBufferPointer($0)) }
                ?? utf8.elementsEqual(name)
            if found { return index }
        }
        return nil
    }

    /// The fields that differ from `before`: new values, and removed fields (for `nil` after, every field of before).
    static func changedFields(from before: Document?, to after: Document?) -> [String: DocumentChangeDetails
        .FieldChange]
    {
        var changes: [String: DocumentChangeDetails.FieldChange] = [:]
        after?.forEachField { name, value in
            let same =
                before?.withValue(named: name) { old in old.map { PackedFields.valuesEqual(value, $0) } ?? false }
                ?? false
            if !same {
                var reader = PackedFieldsReader(base: value.baseAddress!)
                changes[String(decoding: name, as: UTF8.self)] = .set(reader.value())
            }
        }
        before?.forEachField { name, _ in
            let present = after?.withValue(named: name) { $0 != nil } ?? false
            if !present { changes[String(decoding: name, as: UTF8.self)] = .removed }
        }
        return changes
    }
}
