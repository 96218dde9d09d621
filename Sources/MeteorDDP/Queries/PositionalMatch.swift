import EJSON

extension MongoSelector {
    /// Where the selector matched inside an array of `document`, for the positional `$` of an update (minimongo's
    /// `arrayIndices`): per field condition, the indices of the first array element (in lookup order) that satisfies
    /// it; of several conditions that give indices, the last one's, as minimongo's `$and` keeps.
    public func arrayIndices(in document: EJSONObject) -> [Int]? {
        Self.arrayIndices(selector, in: document)
    }

    private static func arrayIndices(_ selector: EJSONValue, in document: EJSONObject) -> [Int]? {
        guard case .object(let object) = selector else { return nil }
        var found: [Int]?
        for (key, condition) in object {
            switch key {
            case "$and":
                for subSelector in condition.arrayValue ?? [] {
                    if let indices = arrayIndices(subSelector, in: document) { found = indices }
                }
            case "$or":
                // minimongo's $or keeps indices only when it has a single clause.
                if let clauses = condition.arrayValue, clauses.count == 1,
                    let indices = arrayIndices(clauses[0], in: document)
                {
                    found = indices
                }
            default:
                if !key.hasPrefix("$"), let indices = fieldIndices(key, condition, in: document) { found = indices }
            }
        }
        return found
    }

    /// The indices of the first branch (arrays expanded) of `path` that satisfies `condition`.
    private static func fieldIndices(_ path: String, _ condition: EJSONValue, in document: EJSONObject) -> [Int]? {
        let lookup = FieldLookup(path)
        var elementMatch: MongoSelector?
        var elementValueMatch: BranchedMatcher?
        if case .object(let operators) = condition, operators.count == 1, let inner = operators["$elemMatch"] {
            if (try? SelectorCompiler.isValueCondition(inner)) == true {
                elementValueMatch = try? SelectorCompiler().valueSelector(inner)
            } else {
                elementMatch = try? MongoSelector(inner)
            }
        }
        if case .object(let operators) = condition, !operators.isEmpty,
            operators.keys.allSatisfy({ ["$ne", "$nin", "$not", "$exists"].contains($0) })
        {
            // Inverted conditions match no particular element (minimongo gives them no indices).
            return nil
        }
        guard let matcher = try? SelectorCompiler().valueSelector(condition) else { return nil }
        for (value, dontIterate, indices) in lookup.branchesWithIndices(of: .value(.object(document))) {
            if case .array(let elements)? = value, elementMatch != nil || elementValueMatch != nil {
                // $elemMatch picks the element it matched.
                for (index, element) in elements.enumerated() {
                    let matched =
                        elementValueMatch.map { $0(.single(element)) }
                        ?? (element.objectValue.map { elementMatch!.matches($0) } ?? false)
                    if matched { return indices + [index] }
                }
                continue
            }
            if matcher(.single(value)), !indices.isEmpty { return indices }
            if case .array(let elements)? = value, !dontIterate {
                for (index, element) in elements.enumerated() where matcher(.single(element)) {
                    return indices + [index]
                }
            }
        }
        return nil
    }

    /// The document an upsert inserts (minimongo's `_createUpsertDocument`): the selector's equality conditions
    /// (`a: v`, `$eq`, a one-element `$all`, `$and`, a one-clause `$or`) set as fields, then the modifier applied as an
    /// insert (`$setOnInsert` sets). Its `_id` is the selector's or the modifier's, if either names one.
    ///
    /// - Throws: ``QueryError`` when the selector sets a path twice or a path and its parent.
    public func upsertDocument(applying modifier: MongoModifier) throws(QueryError) -> EJSONObject {
        var fields: EJSONObject = [:]
        try Self.populate(&fields, from: selector)
        var document: EJSONObject = [:]
        if let id = fields.removeValue(forKey: "_id"), id.isTruthy { document["_id"] = id }
        if !fields.isEmpty { document = try MongoModifier(["$set": .object(fields)]).apply(to: document) }
        return try modifier.apply(to: document, isInsert: true)
    }

    private static func populate(_ fields: inout EJSONObject, from selector: EJSONValue) throws(QueryError) {
        guard case .object(let object) = selector else {
            switch selector {
            case .string, .number, .custom(type: "oid", _): try insert(&fields, "_id", selector)
            default: break
            }
            return
        }
        for (key, value) in object {
            switch key {
            case "$and":
                for element in value.arrayValue ?? [] { try populate(&fields, from: element) }
            case "$or":
                if let clauses = value.arrayValue, clauses.count == 1 { try populate(&fields, from: clauses[0]) }
            default:
                if !key.hasPrefix("$") { try populate(&fields, key, value) }
            }
        }
    }

    private static func populate(_ fields: inout EJSONObject, _ key: String, _ value: EJSONValue) throws(QueryError) {
        switch value {
        case .object(let object):
            let unprefixed = object.keys.filter { !$0.hasPrefix("$") }
            if !unprefixed.isEmpty || object.isEmpty {
                if unprefixed.count != object.count { throw QueryError("unknown operator: \(unprefixed[0])") }
                try validateForStorage(object, path: key)
                try insert(&fields, key, value)
            } else {
                for (name, operand) in object {
                    if name == "$eq" {
                        try populate(&fields, key, operand)
                    } else if name == "$all" {
                        for element in operand.arrayValue ?? [] { try populate(&fields, key, element) }
                    }
                }
            }
        case .regularExpression:
            break
        default:
            try insert(&fields, key, value)
        }
    }

    /// minimongo's `validateObject`: the keys of a literal object an upsert would store, with its messages (their
    /// odd quoting included).
    private static func validateForStorage(_ object: EJSONObject, path: String) throws(QueryError) {
        for (key, value) in object {
            if key.contains(".") {
                throw QueryError("The dotted field '\(key)' in '\(path).\(key) is not valid for storage.")
            }
            if key.hasPrefix("$") {
                throw QueryError("The dollar ($) prefixed field  '\(path).\(key) is not valid for storage.")
            }
            if case .object(let child) = value { try validateForStorage(child, path: path + "." + key) }
        }
    }

    private static func insert(_ fields: inout EJSONObject, _ key: String, _ value: EJSONValue) throws(QueryError) {
        for existing in fields.keys {
            if existing == key { throw QueryError("cannot infer query fields to set, path '\(key)' is matched twice") }
            if existing.hasPrefix(key + ".") || key.hasPrefix(existing + ".") {
                throw QueryError("cannot infer query fields to set, both paths '\(existing)' and '\(key)' are matched")
            }
        }
        fields[key] = value
    }
}
