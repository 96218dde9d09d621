import Foundation

/// A MongoDB ObjectID as Meteor's `mongo-id` package carries it: 24 lowercase hex digits,
/// `{"$type": "oid", "$value": "5f1d7a3c9e1b2a0012345678"}` in EJSON.
///
/// Collections created with `idGeneration: 'MONGO'` use them as `_id`s, and apps that share a MongoDB keep them in
/// references. `EJSONEncoder` and `EJSONDecoder` write and read the EJSON form (the decoder also takes the id as
/// 24 hex digits, the form a document's `_id` has in the cache); other coders see the hex string. Ordered by its hex
/// digits, as minimongo orders ObjectIDs.
///
/// For example:
/// ```swift
/// let id = ObjectID("5F1D7A3C9E1B2A0012345678")! // stored as 5f1d7a3c9e1b2a0012345678
/// EJSON.stringify(id.ejsonValue)                 // {"$type":"oid","$value":"5f1d7a3c9e1b2a0012345678"}
/// let fresh = ObjectID()                         // 24 random hex digits, as Meteor's client makes one
/// ```
public struct ObjectID: Sendable, Hashable, Comparable, Codable, CustomStringConvertible, LosslessStringConvertible {
    /// The 24 lowercase hex digits (Meteor's `toHexString()`).
    public let hexString: String

    /// The ObjectID of 24 hex digits (either case; kept in lowercase, as Meteor's constructor does), or `nil` for
    /// anything else (Meteor throws "Invalid hexadecimal string for creating an ObjectID").
    public init?(_ hexString: String) {
        let lowered = hexString.lowercased()
        guard Self.isHex24(lowered) else { return nil }
        self.hexString = lowered
    }

    /// A new ObjectID of 24 random hex digits from a secure generator, as Meteor's client makes one
    /// (`Random.hexString(24)`: random-based, not MongoDB's timestamp-and-counter layout).
    public init() {
        var generator = SystemRandomNumberGenerator()
        self.init(using: &generator)
    }

    /// A new ObjectID of 24 hex digits drawn from `generator`.
    public init<G: RandomNumberGenerator>(using generator: inout G) {
        let digits = Array("0123456789abcdef".utf8)
        hexString = String(decoding: (0..<24).map { _ in digits[Int(generator.next() & 0xF)] }, as: UTF8.self)
    }

    /// The ObjectID an EJSON value holds: `{"$type": "oid", "$value": hex}`.
    public init?(ejson value: EJSONValue) {
        guard case .custom(type: "oid", value: .string(let hex)) = value else { return nil }
        self.init(hex)
    }

    /// The EJSON form, `{"$type": "oid", "$value": hex}`.
    public var ejsonValue: EJSONValue { .custom(type: "oid", value: .string(hexString)) }

    /// The seconds since 1970 in the first 8 hex digits (Meteor's `getTimestamp()`; meaningful only for ids MongoDB
    /// made, not for random ones).
    public var timestamp: Int { Int(hexString.prefix(8), radix: 16) ?? 0 }

    /// `ObjectID("…")`, as Meteor's `toString()`.
    public var description: String { "ObjectID(\"\(hexString)\")" }

    public static func < (lhs: ObjectID, rhs: ObjectID) -> Bool { lhs.hexString < rhs.hexString }

    /// Decodes the hex string (any decoder: `EJSONDecoder` takes the EJSON form before this is reached).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let id = ObjectID(text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "not 24 hex digits: \(text.prefix(40))")
        }
        self = id
    }

    /// Encodes the hex string (`EJSONEncoder` writes the EJSON form instead).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hexString)
    }

    /// Whether `text` is 24 lowercase hex digits (mongo-id's `_looksLikeObjectID`, also used for ids on the wire).
    static func isHex24(_ text: String) -> Bool {
        text.utf8.count == 24 && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}

extension EJSONValue {
    /// An ObjectID value (`{"$type": "oid", "$value": hex}`).
    public static func objectID(_ id: ObjectID) -> EJSONValue { id.ejsonValue }

    /// The ObjectID, if this is one.
    public var objectIDValue: ObjectID? { ObjectID(ejson: self) }

    /// A `Decimal` value as mongo-decimal carries it (`{"$type": "Decimal", "$value": "1.5"}`).
    public static func decimal(_ decimal: Decimal) -> EJSONValue {
        .custom(type: "Decimal", value: .string(decimal.description))
    }

    /// The decimal, if this is a mongo-decimal `Decimal` whose text Foundation reads.
    public var decimalValue: Decimal? {
        guard case .custom(type: "Decimal", value: .string(let text)) = self else { return nil }
        return Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))
    }
}
