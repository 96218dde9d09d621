import Foundation

/// Meteor's built-in EJSON converters: which JSON objects stand for dates, binary, non-finite numbers, regular
/// expressions, escaped objects and custom types, and which plain objects must be escaped on output.
enum EJSONTypes {
    /// Converts a parsed JSON object that matches a converter (all keys `$`-prefixed, at most two of them);
    /// anything else stays a plain object.
    static func fromJSONObject(_ object: EJSONObject, offset: Int, _ options: EJSON.ParseOptions) throws(EJSONError)
        -> EJSONValue
    {
        guard object.count <= 2, object.count > 0, let firstKey = object.keys.first,
            firstKey.utf8.first == UInt8(ascii: "$")
        else {
            return .object(object)
        }
        if object.count == 1 {
            let value = object.values[0]
            switch firstKey {
            case "$date":
                guard case .number(let ms) = value else {
                    throw EJSONError(.invalidEJSONValue("$date must be a number"), at: offset)
                }
                // A JavaScript Date keeps whole milliseconds (TimeClip truncates toward zero).
                return .date(millisecondsSince1970: ms.isFinite ? ms.rounded(.towardZero) : ms)
            case "$binary":
                guard case .string(let base64) = value, let data = decodeBase64(base64) else {
                    throw EJSONError(.invalidEJSONValue("$binary must be a base64 string"), at: offset)
                }
                return .binary(data)
            case "$InfNaN":
                guard case .number(let sign) = value else {
                    throw EJSONError(.invalidEJSONValue("$InfNaN must be a number"), at: offset)
                }
                return .number(sign > 0 ? .infinity : sign < 0 ? -.infinity : .nan)
            case "$escape":
                guard case .object(let escaped) = value else { return .object(object) }
                // Keys are taken literally; values were already converted when they were parsed.
                return .object(escaped)
            default:
                return .object(object)
            }
        }
        if let source = object["$regexp"], let flags = object["$flags"] {
            guard case .string(let pattern) = source, case .string(let flags) = flags else {
                throw EJSONError(.invalidEJSONValue("$regexp and $flags must be strings"), at: offset)
            }
            return .regularExpression(pattern: pattern, flags: EJSONValue.normalizedRegularExpressionFlags(flags))
        }
        guard let typeValue = object["$type"], let payload = object["$value"] else { return .object(object) }
        guard case .string(let typeName) = typeValue else {
            throw EJSONError(.invalidEJSONValue("$type must be a string"), at: offset)
        }
        // A name nobody registered: kept as an opaque value (its name and raw value, written back as read), unless
        // the caller asked for Meteor's refusal.
        let refuses = options.refusesUnregisteredTypes
        let registered = EJSONTypeRegistry.shared.isKnown(typeName, reportingUnregistered: !refuses)
        if refuses && !registered { throw EJSONError(.unknownCustomType(typeName), at: offset) }
        // mongo-id's constructor lowercases an ObjectID's hex digits (`_looksLikeObjectID` then checks them).
        if typeName == "oid", case .string(let hex) = payload, let id = ObjectID(hex) {
            return .custom(type: typeName, value: .string(id.hexString))
        }
        return .custom(type: typeName, value: payload)
    }

    /// Whether a plain object would be mistaken for an EJSON type and must be written as `{"$escape": …}`.
    static func needsEscape(_ object: EJSONObject) -> Bool {
        guard object.count == 1 || object.count == 2, object.keys.allSatisfy({ $0.utf8.first == UInt8(ascii: "$") })
        else { return false }
        if object.count == 1 {
            switch object.keys[0] {
            case "$date", "$binary", "$InfNaN", "$escape": return true
            default: return false
            }
        }
        return (object["$type"] != nil && object["$value"] != nil)
            || (object["$regexp"] != nil && object["$flags"] != nil)
    }

    /// Standard base64 with or without `=` padding (Meteor's base64 tolerates missing padding).
    static func decodeBase64(_ text: String) -> Data? {
        var padded = text
        let remainder = padded.utf8.count % 4
        if remainder == 1 { return nil }
        if remainder > 0 { padded += String(repeating: "=", count: 4 - remainder) }
        return Data(base64Encoded: padded)
    }
}
