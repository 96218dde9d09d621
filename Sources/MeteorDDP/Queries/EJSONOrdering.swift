import EJSON
import Foundation

/// Mongo's order of values (minimongo's `LocalCollection._f._cmp` and `_typeorder`): a missing value before
/// everything, then null, numbers, strings, objects, arrays, binary data, ObjectIDs, booleans, dates, regular
/// expressions. Values of one type compare by value: objects as their `[key, value, key, value…]` lists, arrays
/// element by element, binary data shorter first, then byte by byte. mongo-decimal's `Decimal` is a number. With a
/// collator (a query's ``Collation``) strings compare with it, at any depth, object keys and ObjectIDs' hex digits
/// too (minimongo's `_cmp(a, b, collator)`).
enum EJSONOrdering {
    /// Negative when `a` sorts first, positive when `b` does, zero when they are equivalent.
    static func compare(_ a: EJSONValue?, _ b: EJSONValue?, collator: Collator? = nil) -> Int {
        guard let a else { return b == nil ? 0 : -1 }
        guard let b else { return 1 }
        return compare(a, b, collator: collator)
    }

    static func compare(_ a: EJSONValue, _ b: EJSONValue, collator: Collator? = nil) -> Int {
        let (ra, rb) = (typeOrder(a), typeOrder(b))
        if ra != rb { return ra < rb ? -1 : 1 }
        switch (a, b) {
        case (.number(let x), .number(let y)): return x < y ? -1 : x > y ? 1 : 0
        case (.string(let x), .string(let y)):
            if let collator { return collator.compare(x, y) }
            return x < y ? -1 : x > y ? 1 : 0
        case (.bool(let x), .bool(let y)): return x == y ? 0 : (x ? 1 : -1)
        case (.date(let x), .date(let y)):
            let (p, q) = (x.isNaN ? 0 : x, y.isNaN ? 0 : y)
            return p < q ? -1 : p > q ? 1 : 0
        case (.array(let x), .array(let y)): return compareElements(x, y, collator)
        case (.binary(let x), .binary(let y)):
            if x.count != y.count { return x.count < y.count ? -1 : 1 }
            for (p, q) in zip(x, y) where p != q { return p < q ? -1 : 1 }
            return 0
        case (.custom(type: "oid", value: .string(let x)), .custom(type: "oid", value: .string(let y))):
            if let collator { return collator.compare(x, y) }
            return x < y ? -1 : x > y ? 1 : 0
        case (.custom(type: "Decimal", _), _), (_, .custom(type: "Decimal", _)):
            // mongo-decimal's Decimal is a number to minimongo (`_type` 1): compared by value with numbers too.
            return compareNumbers(a, b)
        case (.regularExpression(let p, let f), .regularExpression(let q, let g)):
            // minimongo refuses to sort regular expressions; a total order is kinder.
            return "/\(p)/\(f)" < "/\(q)/\(g)" ? -1 : (p == q && f == g ? 0 : 1)
        case (.object, _), (.custom, _):
            return compareElements(keyValueList(a), keyValueList(b), collator)
        default:
            // Same type order, nothing to tell apart (null and null).
            return 0
        }
    }

    /// Two values of the number type order (numbers and readable Decimals), by value.
    private static func compareNumbers(_ a: EJSONValue, _ b: EJSONValue) -> Int {
        guard let x = decimal(a), let y = decimal(b) else { return 0 }
        return x < y ? -1 : x > y ? 1 : 0
    }

    private static func decimal(_ value: EJSONValue) -> Decimal? {
        if case .number(let n) = value { return n.isFinite ? Decimal(n) : nil }
        return value.decimalValue
    }

    private static func compareElements(_ x: [EJSONValue], _ y: [EJSONValue], _ collator: Collator?) -> Int {
        for (p, q) in zip(x, y) {
            let order = compare(p, q, collator: collator)
            if order != 0 { return order }
        }
        return x.count < y.count ? -1 : x.count > y.count ? 1 : 0
    }

    /// An object (or a custom type, as its JSON object) as `[key, value, key, value…]`.
    private static func keyValueList(_ value: EJSONValue) -> [EJSONValue] {
        let object: EJSONObject
        switch value {
        case .object(let fields): object = fields
        case .custom(let type, let payload): object = ["$type": .string(type), "$value": payload]
        default: return [value]
        }
        var list: [EJSONValue] = []
        list.reserveCapacity(object.count * 2)
        for (key, value) in object {
            list.append(.string(key))
            list.append(value)
        }
        return list
    }

    /// minimongo's `_typeorder(_type(v))`.
    static func typeOrder(_ value: EJSONValue) -> Int {
        switch value {
        case .null: return 0
        case .number: return 1
        case .string: return 2
        case .object: return 3
        case .custom(type: "oid", _): return 6
        case .custom(type: "Decimal", _) where value.decimalValue != nil: return 1
        case .custom: return 3
        case .array: return 4
        case .binary: return 5
        case .bool: return 7
        case .date: return 8
        case .regularExpression: return 9
        }
    }
}
