import Foundation

/// Encodes `Encodable` types as ``EJSONValue``s: keys in encoding order, `Date` as `$date`, `Data` as `$binary`,
/// ``ObjectID`` as `{"$type": "oid", …}`, Foundation's `Decimal` as mongo-decimal's `{"$type": "Decimal", …}`,
/// `nil` optionals omitted from objects.
///
/// For example:
/// ```swift
/// struct Todo: Encodable { var text: String; var createdAt: Date }
/// let value = try EJSONEncoder().encode(Todo(text: "milk", createdAt: Date()))
/// ```
public struct EJSONEncoder: Sendable {
    /// Creates an encoder.
    public init() {}

    /// Encodes `value`.
    /// - Throws: `EncodingError` for integers beyond ±2⁵³ (not exactly representable in JavaScript) and empty values.
    public func encode<T: Encodable>(_ value: T) throws -> EJSONValue {
        let root = EncoderImplementation(codingPath: [])
        try root.encodeValue(value)
        guard let result = root.slot.resolved else {
            throw EncodingError.invalidValue(
                value, .init(codingPath: [], debugDescription: "\(T.self) encoded no value"))
        }
        return result
    }
}

/// A mutable slot a container writes into; containers share slots so nested writes land in their parent.
private final class Slot {
    var value: EJSONValue?
    var array: [Slot]?
    var members: [(String, Slot)]?

    /// The finished value (objects and arrays assembled from their members).
    var resolved: EJSONValue? {
        if let members {
            var object = EJSONObject(minimumCapacity: members.count)
            for (key, slot) in members { if let value = slot.resolved { object[key] = value } }
            return .object(object)
        }
        if let array { return .array(array.map { $0.resolved ?? .null }) }
        return value
    }
}

private final class EncoderImplementation: Encoder {
    let codingPath: [any CodingKey]
    let slot: Slot
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(codingPath: [any CodingKey], slot: Slot = Slot()) {
        self.codingPath = codingPath
        self.slot = slot
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if slot.members == nil { slot.members = [] }
        return KeyedEncodingContainer(KeyedContainer<Key>(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if slot.array == nil { slot.array = [] }
        return UnkeyedContainer(encoder: self)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleContainer(encoder: self) }

    func encodeValue<T: Encodable>(_ value: T) throws {
        switch value {
        case let ejson as EJSONValue: slot.value = ejson
        case let date as Date: slot.value = .date(millisecondsSince1970: (date.timeIntervalSince1970 * 1000).rounded())
        case let data as Data: slot.value = .binary(data)
        case let id as ObjectID: slot.value = id.ejsonValue
        case let decimal as Decimal: slot.value = .decimal(decimal)
        default: try value.encode(to: self)
        }
    }

    func child(_ key: any CodingKey) -> EncoderImplementation {
        EncoderImplementation(codingPath: codingPath + [key])
    }

    static func number<T: BinaryInteger>(_ value: T, path: [any CodingKey]) throws -> EJSONValue {
        guard let double = Double(exactly: value), abs(double) <= 9_007_199_254_740_992 else {
            throw EncodingError.invalidValue(
                value,
                .init(
                    codingPath: path,
                    debugDescription: "\(value) is beyond ±2^53 and cannot be an exact JavaScript number"))
        }
        return .number(double)
    }
}

private struct SingleContainer: SingleValueEncodingContainer {
    let encoder: EncoderImplementation
    var codingPath: [any CodingKey] { encoder.codingPath }

    mutating func encodeNil() throws { encoder.slot.value = .null }
    mutating func encode(_ value: Bool) throws { encoder.slot.value = .bool(value) }
    mutating func encode(_ value: String) throws { encoder.slot.value = .string(value) }
    mutating func encode(_ value: Double) throws { encoder.slot.value = .number(value) }
    mutating func encode(_ value: Float) throws { encoder.slot.value = .number(Double(value)) }
    mutating func encode(_ value: Int) throws {
        encoder.slot.value = try EncoderImplementation.number(value, path: codingPath)
    }
    mutating func encode(_ value: Int8) throws {
        encoder.slot.value = try EncoderImplementation.number(value, path: codingPath)
    }
    mutating func encode(_ value: Int16) throws {
        encoder.slot.value = try EncoderImplementation.number(value, path: codingPath)
    }
    mutating func encode(_ value: Int32) throws {
        encoder.slot.value = try EncoderImplementation.number(value, path: codingPath)
    }
    mutating func encode(_ value: Int64) throws {
        encoder.slot.value = try EncoderImplementation.number(value, path: codingPath)
    }
    mutating func encode(_ value: UInt) throws {
        encoder.slot.value = try EncoderImplementation.number(value, path: codingPath)
    }
    mutating func encode(_ value: UInt8) throws {
        encoder.slot.value = try EncoderImplementation.number(value, path: codingPath)
    }
    mutating func encode(_ value: UInt16) throws {
        encoder.slot.value = try EncoderImplementation.number(value, path: codingPath)
    }
    mutating func encode(_ value: UInt32) throws {
        encoder.slot.value = try EncoderImplementation.number(value, path: codingPath)
    }
    mutating func encode(_ value: UInt64) throws {
        encoder.slot.value = try EncoderImplementation.number(value, path: codingPath)
    }
    mutating func encode<T: Encodable>(_ value: T) throws { try encoder.encodeValue(value) }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: EncoderImplementation
    var codingPath: [any CodingKey] { encoder.codingPath }

    private func member(_ key: any CodingKey) -> EncoderImplementation {
        let child = encoder.child(key)
        if let index = encoder.slot.members!.firstIndex(where: { $0.0 == key.stringValue }) {
            encoder.slot.members![index].1 = child.slot
        } else {
            encoder.slot.members!.append((key.stringValue, child.slot))
        }
        return child
    }

    mutating func encodeNil(forKey key: Key) throws { member(key).slot.value = .null }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        var single = SingleContainer(encoder: member(key))
        try single.encode(value)
    }
    mutating func encode(_ value: Int, forKey key: Key) throws {
        member(key).slot.value = try EncoderImplementation.number(value, path: codingPath + [key])
    }
    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        member(key).slot.value = try EncoderImplementation.number(value, path: codingPath + [key])
    }
    mutating func encode(_ value: Int64, forKey key: Key) throws {
        member(key).slot.value = try EncoderImplementation.number(value, path: codingPath + [key])
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        member(key).container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        member(key).unkeyedContainer()
    }
    mutating func superEncoder() -> any Encoder { member(EJSONCodingKey(stringValue: "super")) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { member(key) }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let encoder: EncoderImplementation
    var codingPath: [any CodingKey] { encoder.codingPath }
    var count: Int { encoder.slot.array!.count }

    private func element() -> EncoderImplementation {
        let child = encoder.child(EJSONCodingKey(intValue: count))
        encoder.slot.array!.append(child.slot)
        return child
    }

    mutating func encodeNil() throws { element().slot.value = .null }
    mutating func encode<T: Encodable>(_ value: T) throws {
        var single = SingleContainer(encoder: element())
        try single.encode(value)
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<
        NestedKey
    > {
        element().container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { element().unkeyedContainer() }
    mutating func superEncoder() -> any Encoder { element() }
}
