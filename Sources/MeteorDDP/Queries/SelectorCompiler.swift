import EJSON
import Foundation

/// The values a value selector is matched against: the branches of a field path in a root, or one value that must
/// not be iterated (an `$elemMatch` element).
enum Branches {
    case lookup(FieldLookup, MatchRoot)
    /// A top-level field's value (a one-part path other than `_id`): its only branch.
    case field(EJSONValue?)
    case single(EJSONValue?)

    @inline(__always)
    func any(_ body: (EJSONValue?, Bool) -> Bool) -> Bool {
        switch self {
        case .lookup(let lookup, let root): return lookup.anyBranch(of: root, body)
        case .field(let value): return body(value, false)
        case .single(let value): return body(value, true)
        }
    }
}

typealias DocumentMatcher = @Sendable (MatchRoot) -> Bool
typealias BranchedMatcher = @Sendable (Branches) -> Bool
/// Matches one value (`nil`: undefined).
typealias ElementMatcher = @Sendable (EJSONValue?) -> Bool

/// Compiles Mongo selectors into closures, rule for rule as minimongo's `compileDocumentSelector` (common.js): a
/// field's value selector matches when *some* branch matches (arrays expanded into their elements, except for
/// `$size` and `$elemMatch`, and `$type`, which looks at the elements only); `$ne`, `$nin`, `$not` and
/// `$exists: false` invert the whole branched match.
struct SelectorCompiler {
    /// The query's collation (minimongo's collator): strings compare with it in equality and ordering.
    var collator: Collator?

    func documentSelector(_ selector: EJSONObject, inElemMatch: Bool = false) throws(QueryError)
        -> DocumentMatcher
    {
        var matchers: [DocumentMatcher] = []
        for (key, subSelector) in selector {
            if key.hasPrefix("$") {
                matchers.append(try logicalOperator(key, subSelector, inElemMatch: inElemMatch))
            } else if !key.contains("."), key != "_id" {
                // The usual case: one field, looked up directly.
                let valueMatcher = try valueSelector(subSelector)
                matchers.append { root in
                    switch root {
                    case .document(let document): return valueMatcher(.field(document[key]))
                    case .value(.object(let object)): return valueMatcher(.field(object[key]))
                    case .value: return valueMatcher(.lookup(FieldLookup(key), root))
                    }
                }
            } else {
                let lookup = FieldLookup(key)
                let valueMatcher = try valueSelector(subSelector)
                matchers.append { root in valueMatcher(.lookup(lookup, root)) }
            }
        }
        return all(matchers)
    }

    private func all(_ matchers: [DocumentMatcher]) -> DocumentMatcher {
        switch matchers.count {
        case 0: return { _ in true }
        case 1: return matchers[0]
        case 2:
            let (first, second) = (matchers[0], matchers[1])
            return { first($0) && second($0) }
        default: return { root in matchers.allSatisfy { $0(root) } }
        }
    }

    private func logicalOperator(_ name: String, _ operand: EJSONValue, inElemMatch: Bool) throws(QueryError)
        -> DocumentMatcher
    {
        switch name {
        case "$and", "$or", "$nor":
            guard case .array(let selectors) = operand, !selectors.isEmpty else {
                throw QueryError("$and/$or/$nor must be nonempty array")
            }
            var matchers: [DocumentMatcher] = []
            for selector in selectors {
                guard case .object(let object) = selector else {
                    throw QueryError("$or/$and/$nor entries need to be full objects")
                }
                matchers.append(try documentSelector(object, inElemMatch: inElemMatch))
            }
            let compiled = matchers
            switch name {
            case "$and":
                return all(compiled)
            case "$or":
                if compiled.count == 1 { return compiled[0] }
                return { root in compiled.contains { $0(root) } }
            default:
                return { root in !compiled.contains { $0(root) } }
            }
        case "$comment":
            return { _ in true }
        case "$where":
            throw QueryError("$where is not supported (it runs JavaScript)")
        default:
            throw QueryError("Unrecognized logical operator: \(name)")
        }
    }

    func valueSelector(_ selector: EJSONValue) throws(QueryError) -> BranchedMatcher {
        if case .regularExpression(let pattern, let flags) = selector {
            let expression = try MongoRegularExpression(pattern: pattern, flags: flags)
            return expanding { expression.matches($0) }
        }
        if try Self.isOperatorObject(selector), case .object(let operators) = selector {
            return try operatorSelector(operators)
        }
        return expanding(try equality(selector))
    }

    /// minimongo's `isOperatorObject`: a plain object whose keys are all operators (`{}` is not one); keys mixing
    /// both kinds are an error unless `inconsistentOK`.
    static func isOperatorObject(_ value: EJSONValue, inconsistentOK: Bool = false) throws(QueryError) -> Bool {
        guard case .object(let object) = value else { return false }
        var operators: Bool?
        for key in object.keys {
            let isOperator = isOperatorKey(key)
            if operators == nil {
                operators = isOperator
            } else if operators != isOperator {
                guard inconsistentOK else { throw QueryError("Inconsistent operator: \(EJSON.stringify(value))") }
                operators = false
            }
        }
        return operators ?? false
    }

    /// Whether minimongo's `isOperatorObject` counts `key` as an operator: it starts with `$`, or it is `diff` (the
    /// oplog's v2 update format, which minimongo tells apart from fields by that name).
    static func isOperatorKey(_ key: String) -> Bool {
        key.hasPrefix("$") || key == "diff"
    }

    static let logicalOperators: Set<String> = ["$and", "$or", "$nor", "$where", "$comment"]

    /// Whether a condition applies to values (`{$gt: 5}`) rather than to documents (`{a: 1}`, `{$or: […]}`), as
    /// minimongo's `$elemMatch` decides: its keys other than logical operators are all operators.
    static func isValueCondition(_ value: EJSONValue) throws(QueryError) -> Bool {
        guard case .object(let object) = value else { return false }
        let nonLogical = EJSONObject(
            uniqueKeysWithValues: object.filter { !logicalOperators.contains($0.key) }.map { ($0.key, $0.value) })
        return try Self.isOperatorObject(.object(nonLogical), inconsistentOK: true)
    }

    // MARK: - Branched matching

    /// minimongo's `convertElementMatcherToBranchedMatcher`: some branch, or (unless told otherwise) some element of
    /// an array branch, matches.
    func expanding(
        expandLeafArrays: Bool = true, includeLeafArrays: Bool = true, _ element: @escaping ElementMatcher
    ) -> BranchedMatcher {
        guard expandLeafArrays else {
            return { branches in branches.any { value, _ in element(value) } }
        }
        return { branches in
            branches.any { value, dontIterate in
                guard case .array(let elements)? = value, !dontIterate else { return element(value) }
                if includeLeafArrays, element(value) { return true }
                return elements.contains { element($0) }
            }
        }
    }

    private func inverted(_ matcher: @escaping BranchedMatcher) -> BranchedMatcher {
        { !matcher($0) }
    }

    private func operatorSelector(_ operators: EJSONObject) throws(QueryError) -> BranchedMatcher {
        var matchers: [BranchedMatcher] = []
        for (name, operand) in operators {
            matchers.append(try valueOperator(name, operand, selector: operators))
        }
        let compiled = matchers
        if compiled.count == 1 { return compiled[0] }
        return { branches in compiled.allSatisfy { $0(branches) } }
    }

    private func valueOperator(_ name: String, _ operand: EJSONValue, selector: EJSONObject) throws(QueryError)
        -> BranchedMatcher
    {
        switch name {
        case "$eq": return expanding(try equality(operand))
        case "$ne": return inverted(expanding(try equality(operand)))
        case "$in": return expanding(try membership(operand))
        case "$nin": return inverted(expanding(try membership(operand)))
        case "$not": return inverted(try valueSelector(operand))
        case "$exists":
            let exists = expanding { $0 != nil }
            return operand.isTruthy ? exists : inverted(exists)
        case "$options":
            guard selector["$regex"] != nil else { throw QueryError("$options needs a $regex") }
            return { _ in true }
        case "$all":
            guard case .array(let criteria) = operand else { throw QueryError("$all requires array") }
            if criteria.isEmpty { return { _ in false } }
            var matchers: [BranchedMatcher] = []
            for criterion in criteria {
                if try Self.isOperatorObject(criterion) { throw QueryError("no $ expressions in $all") }
                matchers.append(try valueSelector(criterion))
            }
            let compiled = matchers
            return { branches in compiled.allSatisfy { $0(branches) } }
        case "$lt": return expanding(try inequality(operand) { $0 < 0 })
        case "$lte": return expanding(try inequality(operand) { $0 <= 0 })
        case "$gt": return expanding(try inequality(operand) { $0 > 0 })
        case "$gte": return expanding(try inequality(operand) { $0 >= 0 })
        case "$mod":
            guard case .array(let pair) = operand, pair.count == 2, case .number(let divisor) = pair[0],
                case .number(let remainder) = pair[1]
            else {
                throw QueryError("argument to $mod must be an array of two numbers")
            }
            return expanding { value in
                guard case .number(let number)? = value else { return false }
                return number.truncatingRemainder(dividingBy: divisor) == remainder
            }
        case "$size":
            let size: Double
            switch operand {
            case .string: size = 0 // what Mongo does, by minimongo's experiments
            case .number(let number): size = number
            default: throw QueryError("$size needs a number")
            }
            return expanding(expandLeafArrays: false) { value in
                guard case .array(let elements)? = value else { return false }
                return Double(elements.count) == size
            }
        case "$type":
            let code = try typeCode(operand)
            return expanding(includeLeafArrays: false) { value in
                guard let value else { return false }
                return MongoType.code(of: value) == code
            }
        case "$regex":
            let expression: MongoRegularExpression
            let options = selector["$options"]
            if let options {
                guard case .string(let flags) = options,
                    flags.unicodeScalars.allSatisfy({ "gim".unicodeScalars.contains($0) })
                else {
                    throw QueryError("Only the i, m, and g regexp options are supported")
                }
                switch operand {
                case .string(let pattern), .regularExpression(let pattern, _):
                    expression = try MongoRegularExpression(pattern: pattern, flags: flags)
                default: throw QueryError("$regex has to be a string or RegExp")
                }
            } else {
                switch operand {
                case .string(let pattern): expression = try MongoRegularExpression(pattern: pattern, flags: "")
                case .regularExpression(let pattern, let flags):
                    expression = try MongoRegularExpression(pattern: pattern, flags: flags)
                default: throw QueryError("$regex has to be a string or RegExp")
                }
            }
            return expanding { expression.matches($0) }
        case "$elemMatch":
            return try elementMatch(operand)
        case "$near", "$maxDistance", "$geoWithin":
            throw QueryError("\(name) is not supported (geospatial queries)")
        case "$bitsAllSet", "$bitsAnySet", "$bitsAllClear", "$bitsAnyClear":
            return expanding(try BitwiseOperators.matcher(name, operand))
        default:
            throw QueryError("Unrecognized operator: \(name)")
        }
    }

    // MARK: - Element matchers

    /// minimongo's `equalityElementMatcher`: `null` matches null or undefined; a string, under a collation, a string
    /// the collator finds equal; anything else deep equality with key order counted.
    func equality(_ operand: EJSONValue) throws(QueryError) -> ElementMatcher {
        if try Self.isOperatorObject(operand) {
            throw QueryError("Can't create equalityValueSelector for operator object")
        }
        if let collator, case .string(let text) = operand {
            return { value in
                guard case .string(let other)? = value else { return false }
                return collator.compare(text, other) == 0
            }
        }
        if case .null = operand {
            return { value in
                guard let value else { return true }
                if case .null = value { return true }
                return false
            }
        }
        return { value in value.map { MongoEquality.equal(operand, $0) } ?? false }
    }

    private func membership(_ operand: EJSONValue) throws(QueryError) -> ElementMatcher {
        guard case .array(let options) = operand else { throw QueryError("$in needs an array") }
        var matchers: [ElementMatcher] = []
        var plainValues: Set<EJSONValue> = []
        for option in options {
            if case .regularExpression(let pattern, let flags) = option {
                let expression = try MongoRegularExpression(pattern: pattern, flags: flags)
                matchers.append { expression.matches($0) }
            } else if try Self.isOperatorObject(option) {
                throw QueryError("cannot nest $ under $in")
            } else if option.isScalar, !option.equalsSomeObjects {
                // Scalars compare the same with or without key order: one hash lookup for them all.
                plainValues.insert(option)
            } else {
                matchers.append(try equality(option))
            }
        }
        let matchesNull = plainValues.contains(.null)
        // Strings (the usual members) are looked up as strings: cheaper to hash than EJSON values.
        let strings = Set(plainValues.compactMap(\.stringValue))
        if let collator, !strings.isEmpty {
            // Under a collation equal strings need not be the same: each is asked.
            let others = plainValues.filter { $0.stringValue == nil }
            let compiled = matchers
            return { value in
                guard let value else { return matchesNull }
                if case .string(let text) = value {
                    if strings.contains(where: { collator.compare($0, text) == 0 }) { return true }
                } else if others.contains(value) {
                    return true
                }
                return compiled.contains { $0(value) }
            }
        }
        // A handful are compared one by one: two strings of different lengths differ at once, where a lookup hashes
        // every byte of the value first (the benchmark's three names: 1.6-1.9x a closure's `contains` with the set,
        // on a fast machine).
        let fewStrings: [String]? = strings.count <= 8 ? Array(strings) : nil
        let others = plainValues.filter { $0.stringValue == nil }
        let compiled = matchers
        return { value in
            // {a: {$in: [null]}} matches when `a` does not exist.
            guard let value else { return matchesNull }
            if case .string(let text) = value {
                if let fewStrings {
                    if fewStrings.contains(text) { return true }
                } else if strings.contains(text) {
                    return true
                }
            } else if !others.isEmpty, others.contains(value) {
                return true
            }
            return !compiled.isEmpty && compiled.contains { $0(value) }
        }
    }

    /// minimongo's `makeInequality`: values of another type never match (`$gt: 5` skips strings); an array operand
    /// matches nothing; numbers compare as their difference (`_cmp`), so NaN and `Infinity` vs `Infinity` match no
    /// inequality.
    private func inequality(_ operand: EJSONValue, _ accepts: @escaping @Sendable (Int) -> Bool)
        throws(QueryError) -> ElementMatcher
    {
        if case .array = operand { return { _ in false } }
        let operandType = MongoType.code(of: operand)
        if case .number(let bound) = operand {
            let collator = collator
            return { value in
                guard case .number(let number)? = value else {
                    // A Decimal is a number to minimongo.
                    guard let value, MongoType.code(of: value) == 1 else { return false }
                    return accepts(EJSONOrdering.compare(value, operand, collator: collator))
                }
                // minimongo compares numbers as `a - b`: with NaN, or Infinity against itself, no comparison holds.
                let difference = number - bound
                if difference.isNaN { return false }
                return accepts(difference < 0 ? -1 : difference > 0 ? 1 : 0)
            }
        }
        let collator = collator
        return { value in
            let value = value ?? .null
            guard MongoType.code(of: value) == operandType else { return false }
            return accepts(EJSONOrdering.compare(value, operand, collator: collator))
        }
    }

    private func typeCode(_ operand: EJSONValue) throws(QueryError) -> Int {
        switch operand {
        case .string(let alias):
            guard let code = MongoType.aliases[alias] else {
                throw QueryError("unknown string alias for $type: \(alias)")
            }
            return code
        case .number(let number):
            guard number != 0, number >= -1, number <= 19 || number == 127, number.rounded() == number else {
                throw QueryError("Invalid numerical $type code: \(EJSON.stringify(operand))")
            }
            return Int(number)
        default:
            throw QueryError("argument to $type is not a number or a string")
        }
    }

    private func elementMatch(_ operand: EJSONValue) throws(QueryError) -> BranchedMatcher {
        guard case .object(let object) = operand else { throw QueryError("$elemMatch need an object") }
        let isDocumentMatcher = !(try Self.isValueCondition(.object(object)))
        if isDocumentMatcher {
            let matcher = try documentSelector(object, inElemMatch: true)
            return expanding(expandLeafArrays: false) { value in
                guard case .array(let elements)? = value else { return false }
                for element in elements {
                    guard element.isIndexable else { return false }
                    if matcher(.value(element)) { return true }
                }
                return false
            }
        }
        let matcher = try valueSelector(operand)
        return expanding(expandLeafArrays: false) { value in
            guard case .array(let elements)? = value else { return false }
            return elements.contains { matcher(.single($0)) }
        }
    }
}

extension EJSONValue {
    /// JavaScript truthiness (`$exists: 0` means false).
    package var isTruthy: Bool {
        switch self {
        case .null: return false
        case .bool(let flag): return flag
        case .number(let number): return number != 0 && !number.isNaN
        case .string(let text): return !text.isEmpty
        default: return true
        }
    }

    /// Not an array, object or custom type: equality never depends on key order.
    var isScalar: Bool {
        switch self {
        case .array, .object, .custom: return false
        default: return true
        }
    }

    /// Whether `EJSON.equals` (``MongoEquality``) finds this value equal to some objects: a date (no keys of its own,
    /// as `{}`), binary (its bytes keyed by index). `$in` asks each such member, as minimongo's
    /// `equalityElementMatcher` does, instead of looking it up among the hashed members.
    var equalsSomeObjects: Bool {
        switch self {
        case .date, .binary: true
        default: false
        }
    }
}
