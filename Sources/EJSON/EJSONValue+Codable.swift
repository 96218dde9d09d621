import Foundation

/// `EJSONValue` is `Codable`, so it can sit inside `Codable` types. With ``EJSONEncoder`` / ``EJSONDecoder`` it passes
/// through as it is; with other coders it maps to plain JSON (dates as their EJSON object, binary as base64 in
/// `{"$binary": …}`), key order being whatever that coder keeps.
extension EJSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([EJSONValue].self) {
            self = .array(array)
        } else {
            let dictionary = try container.decode([String: EJSONValue].self)
            var object = EJSONObject(minimumCapacity: dictionary.count)
            for key in dictionary.keys.sorted() { object[key] = dictionary[key] }
            self = .object(object)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let b): try container.encode(b)
        case .number(let n): try container.encode(n)
        case .string(let s): try container.encode(s)
        case .array(let a): try container.encode(a)
        case .object(let o): try container.encode(Dictionary(uniqueKeysWithValues: o.map { ($0.key, $0.value) }))
        case .date(let ms): try container.encode(["$date": ms])
        case .binary(let data): try container.encode(["$binary": data.base64EncodedString()])
        case .custom(let type, let value): try container.encode(["$type": EJSONValue.string(type), "$value": value])
        case .regularExpression(let pattern, let flags):
            try container.encode(["$regexp": pattern, "$flags": EJSONValue.normalizedRegularExpressionFlags(flags)])
        }
    }
}
