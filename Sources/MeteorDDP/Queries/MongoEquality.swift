import EJSON
import Foundation

/// minimongo's `_f._equal`: `EJSON.equals` with object key order counted, JavaScript's rules included: a date, a
/// regular expression and empty binary data have no keys of their own, so each equals `{}` and the others (two
/// regular expressions are always equal); binary data is an object keyed `"0"`, `"1"`, … to anything but binary.
enum MongoEquality {
    static func equal(_ a: EJSONValue, _ b: EJSONValue) -> Bool {
        switch (a, b) {
        case (.number(let x), .number(let y)): return x == y || (x.isNaN && y.isNaN)
        case (.date(let x), .date(let y)): return x == y
        case (.binary(let x), .binary(let y)): return x == y
        case (.array(let x), .array(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { equal($0, $1) }
        case (.array, _), (_, .array):
            return false
        case (.custom(let t, let x), .custom(let u, let y)):
            // Decimals by value (EJSONValue's ==), other custom types by name and value.
            if t == "Decimal", u == "Decimal" { return a == b }
            return t == u && equal(x, y)
        case (.custom, _), (_, .custom):
            // ObjectID's and Decimal's `equals` need their own kind; a custom type never equals a plain value.
            return false
        case (.object, _), (.date, _), (.regularExpression, _), (.binary, _):
            guard let x = ownKeys(a), let y = ownKeys(b), x.count == y.count else { return false }
            for (p, q) in zip(x, y) where p.key != q.key || !equal(p.value, q.value) { return false }
            return true
        default:
            return a == b
        }
    }

    /// What `Object.keys` gives for a value JavaScript treats as an object with keys (`nil`: not one).
    private static func ownKeys(_ value: EJSONValue) -> [(key: String, value: EJSONValue)]? {
        switch value {
        case .object(let object): return object.map { ($0.key, $0.value) }
        case .date, .regularExpression: return []
        case .binary(let bytes): return bytes.enumerated().map { (String($0.offset), .number(Double($0.element))) }
        default: return nil
        }
    }
}
