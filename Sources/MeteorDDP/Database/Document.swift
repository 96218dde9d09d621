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
public struct Document: @unchecked Sendable, Equatable, Identifiable {
    // @unchecked because `storage` (a ManagedBuffer, never Sendable itself) is written once, before the document
    // exists, and only read afterwards.

    struct Header {
        let id: String
        let fieldCount: Int
        /// The packed fields' size; the id's UTF-8 bytes follow them.
        let byteCount: Int
        let idByteCount: Int
    }

    /// The id and the packed fields in one allocation, followed by a copy of the id's UTF-8 bytes: looking a
    /// document up compares ids there, on the cache lines it reads anyway, not in the id string's own allocation.
    final class Storage: ManagedBuffer<Header, UInt8> {
        /// Whether the document's id is `id`.
        func hasID(_ id: String) -> Bool {
            withUnsafeMutablePointers { header, elements in
                let count = header.pointee.idByteCount
                let stored = UnsafeRawPointer(elements + header.pointee.byteCount)
                return id.utf8.withContiguousStorageIfAvailable { utf8 in
                    utf8.count == count && (count == 0 || memcmp(utf8.baseAddress!, stored, count) == 0)
                } ?? (header.pointee.id == id)
            }
        }
    }

    let storage: Storage

    init(storage: Storage) {
        self.storage = storage
    }

    /// Creates a document.
    public init(id: String, fields: EJSONObject) {
        var byteCount = 0
        for (name, value) in fields { byteCount += PackedFields.fieldSize(name: name, value: value) }
        self.init(storage: Self.makeStorage(id: id, fieldCount: fields.count, byteCount: byteCount) { writer in
            for (name, value) in fields { writer.field(name: name, value: value) }
        })
    }

    private static func makeStorage(id: String, fieldCount: Int, byteCount: Int, write: (inout PackedFieldsWriter) -> Void) -> Storage {
        var utf8 = id
        return utf8.withUTF8 { idBytes in
            let buffer = Storage.create(minimumCapacity: byteCount + idBytes.count) { _ in
                Header(id: id, fieldCount: fieldCount, byteCount: byteCount, idByteCount: idBytes.count)
            }
            buffer.withUnsafeMutablePointerToElements { elements in
                var writer = PackedFieldsWriter(base: UnsafeMutableRawPointer(elements))
                write(&writer)
                precondition(writer.offset == byteCount, "packed document size mismatch")
                if let idBase = idBytes.baseAddress {
                    UnsafeMutableRawPointer(elements + byteCount).copyMemory(from: idBase, byteCount: idBytes.count)
                }
            }
            return unsafeDowncast(buffer, to: Storage.self)
        }
    }

    // MARK: - Reading

    /// The document's id.
    public var id: String { storage.header.id }

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
        if path == "_id" { return .string(id) }
        var components = path.split(separator: ".", omittingEmptySubsequences: false)[...]
        guard let first = components.popFirst() else { return nil }
        var current = self[String(first)]
        for component in components { current = current?[String(component)] }
        return current
    }

    /// The document as one EJSON object with `_id` first (for Codable decoding and the wire).
    public var ejsonValue: EJSONValue {
        var object = EJSONObject(minimumCapacity: fieldCount + 1)
        object["_id"] = .string(id)
        for (name, value) in fields where name != "_id" { object[name] = value }
        return .object(object)
    }

    public static func == (lhs: Document, rhs: Document) -> Bool {
        lhs.storage === rhs.storage || (lhs.id == rhs.id && lhs.hasSameFields(as: rhs))
    }

    /// Whether both are the very same stored version (not merely equal).
    func isIdentical(to other: Document) -> Bool { storage === other.storage }

    // MARK: - Packed access

    /// Calls `body` with the packed fields.
    func withBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        let count = storage.header.byteCount
        return try storage.withUnsafeMutablePointerToElements { elements in
            try body(UnsafeRawBufferPointer(start: UnsafeRawPointer(elements), count: count))
        }
    }

    /// Calls `body` with each field's name (UTF-8) and value (packed, tag included), in order.
    func forEachField(_ body: (_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Void) rethrows {
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
    /// byte.
    func setting(_ changes: EJSONObject, clearing cleared: [String] = []) -> Document {
        // A field both set and cleared ends up cleared, as when Meteor's store applies `fields` then `cleared`.
        var changes = changes
        if !cleared.isEmpty { changes.removeAll { cleared.contains($0.key) } }
        let oldCount = self.fieldCount
        // The changes' names and values are read in place (no copy of a name or value per field compared).
        return changes.keys.elements.withUnsafeBufferPointer { names in
            changes.values.withUnsafeBufferPointer { values in
                cleared.withUnsafeBufferPointer { cleared in
                    setting(names: names, values: values, clearing: cleared, oldCount: oldCount)
                }
            }
        }
    }

    private func setting(
        names: UnsafeBufferPointer<String>, values: UnsafeBufferPointer<EJSONValue>, clearing cleared: UnsafeBufferPointer<String>,
        oldCount: Int
    ) -> Document {
        // Scratch, no heap: per old field its plan (-2 keep, -1 drop, j replace with change j), then per change
        // whether it replaced a field (1) or is appended (0).
        withUnsafeTemporaryAllocation(of: Int.self, capacity: oldCount + names.count) { scratch in
            let replaced = UnsafeMutableBufferPointer(rebasing: scratch[oldCount...])
            replaced.initialize(repeating: 0)
            // One pass to size the result: kept fields by their bytes, replaced and appended ones by their new values.
            var byteCount = 0
            var fieldCount = 0
            var position = 0
            forEachField { name, value in
                defer { position += 1 }
                if !cleared.isEmpty, Self.index(of: name, in: cleared) != nil {
                    scratch[position] = -1
                    return
                }
                if let j = Self.index(of: name, in: names) {
                    replaced[j] = 1
                    scratch[position] = j
                    byteCount += PackedFields.varintSize(UInt64(name.count)) + name.count + PackedFields.valueSize(values[j])
                } else {
                    scratch[position] = -2
                    byteCount += PackedFields.varintSize(UInt64(name.count)) + name.count + value.count
                }
                fieldCount += 1
            }
            for j in names.indices where replaced[j] == 0 {
                byteCount += PackedFields.fieldSize(name: names[j], value: values[j])
                fieldCount += 1
            }
            let storage = Self.makeStorage(id: id, fieldCount: fieldCount, byteCount: byteCount) { writer in
                var position = 0
                forEachField { name, value in
                    defer { position += 1 }
                    switch scratch[position] {
                    case -1: return
                    case -2:
                        writer.varint(UInt64(name.count))
                        writer.bytes(name)
                        writer.bytes(value)
                    case let j:
                        writer.varint(UInt64(name.count))
                        writer.bytes(name)
                        writer.value(values[j])
                    }
                }
                for j in names.indices where replaced[j] == 0 { writer.field(name: names[j], value: values[j]) }
            }
            return Document(storage: storage)
        }
    }

    /// The index of the name equal to `name` (UTF-8) in `names`.
    private static func index(of name: UnsafeRawBufferPointer, in names: UnsafeBufferPointer<String>) -> Int? {
        for index in names.indices {
            let utf8 = names[index].utf8
            guard utf8.count == name.count else { continue }
            let found = utf8.withContiguousStorageIfAvailable { PackedFields.bytesEqual(name, UnsafeRawBufferPointer($0)) }
                ?? utf8.elementsEqual(name)
            if found { return index }
        }
        return nil
    }

    /// The fields that differ from `before`: new values, and removed fields (for `nil` after, every field of before).
    static func changedFields(from before: Document?, to after: Document?) -> [String: DocumentChangeDetails.FieldChange] {
        var changes: [String: DocumentChangeDetails.FieldChange] = [:]
        after?.forEachField { name, value in
            let same = before?.withValue(named: name) { old in old.map { PackedFields.valuesEqual(value, $0) } ?? false } ?? false
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
