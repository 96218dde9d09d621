import Foundation

/// Structural equality with Meteor's `EJSON.equals` defaults: object key order is ignored,
/// numbers compare as doubles (so `NaN == NaN`, as EJSON.equals treats it), dates by milliseconds,
/// binary by bytes, custom types by type name and value (mongo-decimal's `Decimal` by its value).
extension EJSONValue: Equatable {
    public static func == (lhs: EJSONValue, rhs: EJSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.number(let a), .number(let b)): return a == b || (a.isNaN && b.isNaN)
        case (.string(let a), .string(let b)): return a == b
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)):
            guard a.count == b.count else { return false }
            for (key, value) in a {
                guard let other = b[key], other == value else { return false }
            }
            return true
        case (.date(let a), .date(let b)): return a == b
        case (.binary(let a), .binary(let b)): return a == b
        case (.custom(let ta, let va), .custom(let tb, let vb)):
            // mongo-decimal's Decimals are equal by value (its `equals`): 1.5 and 1.50 are one number.
            if ta == "Decimal", tb == "Decimal", let x = lhs.decimalValue, let y = rhs.decimalValue { return x == y }
            return ta == tb && va == vb
        case (.regularExpression(let pa, let fa), .regularExpression(let pb, let fb)):
            // Meteor's EJSON.equals finds any two RegExps equal (they have no own keys); comparing source and flags,
            // as minimongo's matcher does (`toString()`), is what an app expects.
            return pa == pb && normalizedRegularExpressionFlags(fa) == normalizedRegularExpressionFlags(fb)
        case (.null, _), (.bool, _), (.number, _), (.string, _), (.array, _), (.object, _), (.date, _),
            (.binary, _), (.custom, _), (.regularExpression, _):
            return false
        }
    }
}

/// Hashing consistent with `==`: object fields are combined order-independently.
extension EJSONValue: Hashable {
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let b):
            hasher.combine(1)
            hasher.combine(b)
        case .number(let n):
            hasher.combine(2)
            hasher.combine(n.isNaN ? Double.nan.bitPattern : (n == 0 ? 0 : n.bitPattern))
        case .string(let s):
            hasher.combine(3)
            hasher.combine(s)
        case .array(let a):
            hasher.combine(4)
            hasher.combine(a)
        case .object(let o):
            hasher.combine(5)
            var sum = 0
            for (key, value) in o {
                var h = Hasher()
                h.combine(key)
                h.combine(value)
                sum = sum &+ h.finalize()
            }
            hasher.combine(o.count)
            hasher.combine(sum)
        case .date(let ms):
            hasher.combine(6)
            hasher.combine(ms)
        case .binary(let d):
            hasher.combine(7)
            hasher.combine(d)
        case .custom(let type, let value):
            hasher.combine(8)
            hasher.combine(type)
            // Equal Decimals (1.5, 1.50) hash alike: by their value as a double.
            if type == "Decimal", let decimal = decimalValue {
                hasher.combine(NSDecimalNumber(decimal: decimal).doubleValue)
            } else {
                hasher.combine(value)
            }
        case .regularExpression(let pattern, let flags):
            hasher.combine(9)
            hasher.combine(pattern)
            hasher.combine(EJSONValue.normalizedRegularExpressionFlags(flags))
        }
    }
}
