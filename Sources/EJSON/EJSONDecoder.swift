import Foundation

/// Decodes `Decodable` types from ``EJSONValue``s: `Date` from `$date`, `Data` from `$binary`, ``ObjectID`` from
/// `{"$type": "oid", …}` or 24 hex digits, Foundation's `Decimal` from mongo-decimal's form or a number, integers
/// with exact range checks, optionals from absent keys or `null`.
///
/// For example:
/// ```swift
/// struct Todo: Decodable { var _id: String; var text: String; var createdAt: Date }
/// let todo = try EJSONDecoder().decode(Todo.self, from: document.ejsonValue)
/// ```
public struct EJSONDecoder: Sendable {
    /// Creates a decoder.
    public init() {}

    /// Decodes a value of `type` from `value`.
    /// - Throws: `DecodingError` with the coding path of the problem.
    public func decode<T: Decodable>(_ type: T.Type, from value: EJSONValue) throws -> T {
        try DecoderImplementation(value: value, codingPath: []).decodeValue(type)
    }
}

private struct DecoderImplementation: Decoder {
    let value: EJSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let object) = value else { throw mismatch([String: Any].self) }
        return KeyedDecodingContainer(KeyedContainer<Key>(object: object, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let array) = value else { throw mismatch([Any].self) }
        return UnkeyedContainer(array: array, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func mismatch(_ type: Any.Type) -> DecodingError {
        .typeMismatch(
            type,
            .init(
                codingPath: codingPath, debugDescription: "expected \(type), found \(EJSON.stringify(value).prefix(80))"
            ))
    }

    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        switch type {
        case is EJSONValue.Type: return value as! T
        case is Date.Type:
            guard case .date(let ms) = value else { throw mismatch(Date.self) }
            return Date(timeIntervalSince1970: ms / 1000) as! T
        case is Data.Type:
            guard case .binary(let data) = value else { throw mismatch(Data.self) }
            return data as! T
        case is ObjectID.Type:
            // The EJSON form, or 24 hex digits (a document's `_id` as the cache keeps it).
            guard let id = value.objectIDValue ?? value.stringValue.flatMap(ObjectID.init) else {
                throw mismatch(ObjectID.self)
            }
            return id as! T
        case is Decimal.Type:
            // mongo-decimal's form, or a plain number.
            if let decimal = value.decimalValue { return decimal as! T }
            guard case .number(let n) = value, n.isFinite else { throw mismatch(Decimal.self) }
            return Decimal(n) as! T
        default:
            return try T(from: self)
        }
    }

    func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        guard case .number(let n) = value else { throw mismatch(type) }
        guard n.rounded(.towardZero) == n, let exact = T(exactly: n) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: codingPath, debugDescription: "\(n) does not fit in \(type)"))
        }
        return exact
    }
}

extension DecoderImplementation: SingleValueDecodingContainer {
    func decodeNil() -> Bool { value.isNull }
    func decode(_ type: Bool.Type) throws -> Bool {
        guard case .bool(let b) = value else { throw mismatch(type) }
        return b
    }
    func decode(_ type: String.Type) throws -> String {
        guard case .string(let s) = value else { throw mismatch(type) }
        return s
    }
    func decode(_ type: Double.Type) throws -> Double {
        guard case .number(let n) = value else { throw mismatch(type) }
        return n
    }
    func decode(_ type: Float.Type) throws -> Float { Float(try decode(Double.self)) }
    func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decodeValue(type) }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: EJSONObject
    let codingPath: [any CodingKey]

    var allKeys: [Key] { object.keys.compactMap { Key(stringValue: $0) } }
    func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

    private func child(_ key: Key) throws -> DecoderImplementation {
        guard let value = object[key.stringValue] else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: codingPath, debugDescription: "no value for key \"\(key.stringValue)\""))
        }
        return DecoderImplementation(value: value, codingPath: codingPath + [key])
    }

    func decodeNil(forKey key: Key) throws -> Bool { object[key.stringValue]?.isNull ?? true }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let decoder = try child(key)
        if decoder.value.isNull, !(T.self is EJSONValue.Type) {
            throw DecodingError.valueNotFound(
                type, .init(codingPath: decoder.codingPath, debugDescription: "null for a non-optional \(type)"))
        }
        return try decoder.decodeValue(type)
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let value = object[key.stringValue], !value.isNull else { return nil }
        return try DecoderImplementation(value: value, codingPath: codingPath + [key]).decodeValue(type)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try child(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try child(key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        DecoderImplementation(value: .object(object), codingPath: codingPath)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        DecoderImplementation(value: object[key.stringValue] ?? .null, codingPath: codingPath + [key])
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let array: [EJSONValue]
    let codingPath: [any CodingKey]
    var currentIndex = 0

    init(array: [EJSONValue], codingPath: [any CodingKey]) {
        self.array = array
        self.codingPath = codingPath
    }

    var count: Int? { array.count }
    var isAtEnd: Bool { currentIndex >= array.count }

    private mutating func next() throws -> DecoderImplementation {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                Any.self,
                .init(
                    codingPath: codingPath + [EJSONCodingKey(intValue: currentIndex)],
                    debugDescription: "unkeyed container is at its end"))
        }
        defer { currentIndex += 1 }
        return DecoderImplementation(
            value: array[currentIndex], codingPath: codingPath + [EJSONCodingKey(intValue: currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, array[currentIndex].isNull else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().decodeValue(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<
        NestedKey
    > {
        try next().container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }
    mutating func superDecoder() throws -> any Decoder { try next() }
}
