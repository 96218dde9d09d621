import EJSON

/// minimongo's `LocalCollection._f._type`: the BSON type code of a value, as `$type` and inequalities use it.
enum MongoType {
    static func code(of value: EJSONValue) -> Int {
        switch value {
        case .number: return 1
        case .string: return 2
        case .object: return 3
        case .array: return 4
        case .binary: return 5
        case .custom(type: "oid", _): return 7
        case .custom(type: "Decimal", _) where value.decimalValue != nil: return 1
        case .custom: return 3
        case .bool: return 8
        case .date: return 9
        case .null: return 10
        case .regularExpression: return 11
        }
    }

    static let aliases: [String: Int] = [
        "double": 1, "string": 2, "object": 3, "array": 4, "binData": 5, "undefined": 6, "objectId": 7, "bool": 8,
        "date": 9, "null": 10, "regex": 11, "dbPointer": 12, "javascript": 13, "symbol": 14, "javascriptWithScope": 15,
        "int": 16, "timestamp": 17, "long": 18, "decimal": 19, "minKey": -1, "maxKey": 127
    ]
}
