import Foundation

/// The names of the objects ``DocumentMessageDecoder`` is writing (where each name's bytes are in its output), to
/// find duplicate keys: a linear scan over the object's names comparing hashes (FNV-1a) and lengths, and the bytes
/// only when both match (objects have at most `maximumFieldsPerObject` fields).
struct NameStack {
    struct Name {
        let offset: Int
        let count: Int
        let hash: UInt64
    }

    private var base = UnsafeMutablePointer<Name>.allocate(capacity: 16)
    private(set) var capacity = 16
    var count = 0

    func deallocate() { base.deallocate() }

    /// Adds `name` (bytes in `out`) to the object whose names start at `first`; `false` if that object has it already.
    mutating func push(_ name: Name, in out: PackedScratch, from first: Int) -> Bool {
        let bytes = out.base + name.offset
        for index in first..<count {
            let earlier = base[index]
            guard earlier.hash == name.hash, earlier.count == name.count else { continue }
            if name.count == 0 || memcmp(out.base + earlier.offset, bytes, name.count) == 0 { return false }
        }
        if count == capacity {
            let grown = UnsafeMutablePointer<Name>.allocate(capacity: capacity * 2)
            grown.initialize(from: base, count: count)
            base.deallocate()
            base = grown
            capacity *= 2
        }
        base[count] = name
        count += 1
        return true
    }
}

/// The growable buffer ``DocumentMessageDecoder`` writes packed fields into, and ``Document/init(id:fields:)``.
struct PackedScratch {
    private(set) var base: UnsafeMutableRawPointer
    private(set) var capacity: Int
    var count = 0

    init(capacity: Int) {
        self.capacity = max(capacity, 64)
        base = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 8)
    }

    func deallocate() { base.deallocate() }

    @inline(__always)
    private mutating func ensure(_ extra: Int) {
        guard count + extra > capacity else { return }
        var newCapacity = capacity * 2
        while count + extra > newCapacity { newCapacity *= 2 }
        let grown = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 8)
        grown.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = grown
        capacity = newCapacity
    }

    @inline(__always)
    mutating func byte(_ value: UInt8) {
        ensure(1)
        base.storeBytes(of: value, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    mutating func varint(_ value: UInt64) {
        ensure(10)
        var writer = PackedFieldsWriter(base: base, offset: count)
        writer.varint(value)
        count = writer.offset
    }

    mutating func double(_ value: Double) {
        ensure(8)
        base.storeBytes(of: value.bitPattern.littleEndian, toByteOffset: count, as: UInt64.self)
        count += 8
    }

    mutating func bytes(_ source: UnsafeRawBufferPointer) {
        guard let address = source.baseAddress, source.count > 0 else { return }
        ensure(source.count)
        (base + count).copyMemory(from: address, byteCount: source.count)
        count += source.count
    }

    /// Reserves `size` bytes to be written later; returns their position.
    mutating func reserve(_ size: Int) -> Int {
        ensure(size)
        defer { count += size }
        return count
    }

    /// Writes a container's tag and reserves its 4-byte length; returns where the length goes (see
    /// ``patchLength(at:)``).
    mutating func beginContainer(_ tag: PackedFields.Tag) -> Int {
        byte(tag.rawValue)
        return reserve(4)
    }

    /// Writes a container's length (the bytes after the 4 reserved at `position`).
    mutating func patchLength(at position: Int) {
        base.storeBytes(of: UInt32(count - position - 4).littleEndian, toByteOffset: position, as: UInt32.self)
    }

    /// Writes `value` as a varint into the one byte reserved at `position`, moving what follows when it needs more.
    mutating func insertVarint(_ value: UInt64, at position: Int) {
        let size = PackedFields.varintSize(value)
        if size > 1 {
            ensure(size - 1)
            memmove(base + position + size, base + position + 1, count - position - 1)
            count += size - 1
        }
        var writer = PackedFieldsWriter(base: base, offset: position)
        writer.varint(value)
    }
}
