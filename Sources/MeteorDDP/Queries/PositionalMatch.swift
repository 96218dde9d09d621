import EJSON

extension MongoSelector {
    /// Where the selector matched inside an array of `document`, for the positional `$` of an update: the index of
    /// the first element of the first array the selector's field conditions reach that satisfies its condition.
    public func arrayIndices(in document: EJSONObject) -> [Int]? {
        guard case .object(let selector) = selector else { return nil }
        for (key, condition) in selector where !key.hasPrefix("$") {
            let parts = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            var value: EJSONValue = .object(document)
            for (position, part) in parts.enumerated() {
                if case .array(let elements) = value {
                    let rest = parts[position...].joined(separator: ".")
                    if let index = elements.firstIndex(where: { Self.element($0, satisfies: condition, at: rest) }) { return [index] }
                    break
                }
                guard case .object(let object) = value, let child = object[part] else { break }
                value = child
                if position == parts.count - 1, case .array(let elements) = child {
                    if let index = elements.firstIndex(where: { Self.element($0, satisfies: condition, at: nil) }) { return [index] }
                }
            }
        }
        return nil
    }

    private static func element(_ element: EJSONValue, satisfies condition: EJSONValue, at rest: String?) -> Bool {
        if let rest, !rest.isEmpty {
            guard element.isIndexable, let selector = try? MongoSelector([rest: condition]) else { return false }
            if case .object(let object) = element { return selector.matches(object) }
            return false
        }
        // The condition applies to the element itself; `$elemMatch`'s applies to the element it picks.
        if case .object(let operators) = condition, operators.count == 1, let inner = operators["$elemMatch"] {
            if (try? SelectorCompiler.isOperatorObject(inner, inconsistentOK: true)) == true {
                return (try? SelectorCompiler.valueSelector(inner))?(.single(element)) ?? false
            }
            guard case .object(let object) = element, let selector = try? MongoSelector(inner) else { return false }
            return selector.matches(object)
        }
        return (try? SelectorCompiler.valueSelector(condition))?(.single(element)) ?? false
    }

    /// The document an upsert inserts before its modifier runs (minimongo's `_createUpsertDocument`): the selector's
    /// equality conditions as fields.
    public func upsertFields() -> EJSONObject {
        var document: EJSONValue = .object([:])
        Self.populate(&document, from: selector)
        guard case .object(let fields) = document else { return [:] }
        return fields
    }

    private static func populate(_ document: inout EJSONValue, from selector: EJSONValue) {
        switch selector {
        case .string, .custom(type: "oid", _):
            _ = try? ModTarget.find(&document, ["_id"], options: .init()) { target throws(QueryError) in target.set(selector) }
        case .object(let object):
            for (key, condition) in object {
                if key == "$and", case .array(let selectors) = condition {
                    for selector in selectors { populate(&document, from: selector) }
                    continue
                }
                if key.hasPrefix("$") { continue }
                var value: EJSONValue? = condition
                if case .object(let operators) = condition, operators.keys.first?.hasPrefix("$") == true {
                    value = operators.count == 1 ? operators["$eq"] : nil
                }
                if case .regularExpression? = value { value = nil }
                guard let value else { continue }
                let parts = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
                _ = try? ModTarget.find(&document, parts, options: .init()) { target throws(QueryError) in target.set(value) }
            }
        default:
            break
        }
    }
}
