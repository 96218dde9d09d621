import EJSON

/// What a selector is matched against: a cached ``Document`` or an EJSON value (an `$elemMatch` element).
enum MatchRoot {
    case document(Document)
    case value(EJSONValue)

    /// The root's own field `name` (or array element), and whether the root is an array.
    @inline(__always)
    func first(_ part: FieldLookup.Part) -> (value: EJSONValue?, rootIsArray: Bool)? {
        switch self {
        case .document(let document):
            if part.isID { return (MongoID.parse(document.id), false) }
            return (document[part.name], false)
        case .value(let value):
            return FieldLookup.child(of: value, part)
        }
    }
}

/// A dotted path and minimongo's way of following it (`makeLookupFunction`): through arrays, a part is looked up in
/// every element that is an object, and a numeric part also indexes the array; each value reached is a *branch*.
struct FieldLookup: Sendable {
    struct Part: Sendable {
        let name: String
        /// The part as an array index, when it is all digits.
        let index: Int?
        /// Whether the digits are the index as JavaScript writes it (`1`, not `01`): `array["01"]` is undefined.
        let isCanonicalIndex: Bool
        let isID: Bool
    }

    let parts: [Part]
    /// Whether numeric parts index arrays without also looking into their elements (sort keys do).
    let forSort: Bool

    init(_ path: String, forSort: Bool = false) {
        parts = path.split(separator: ".", omittingEmptySubsequences: false).enumerated().map { position, name in
            let isNumeric = !name.isEmpty && name.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
            let index = isNumeric ? Int(name) : nil
            return Part(
                name: String(name), index: index, isCanonicalIndex: index.map { String($0) == name } ?? false,
                isID: position == 0 && name == "_id")
        }
        self.forSort = forSort
    }

    /// Visits every branch of `root` (its value, or `nil` for undefined, and whether it must not be iterated); stops
    /// and returns `true` as soon as `body` does.
    func anyBranch(of root: MatchRoot, _ body: (EJSONValue?, Bool) -> Bool) -> Bool {
        guard let (value, rootIsArray) = root.first(parts[0]) else { return false }
        return follow(value, parentIsArray: rootIsArray, from: 1, body)
    }

    /// The branches as a list (for sort keys).
    func branches(of root: MatchRoot) -> [(value: EJSONValue?, dontIterate: Bool)] {
        var result: [(EJSONValue?, Bool)] = []
        _ = anyBranch(of: root) { value, dontIterate in
            result.append((value, dontIterate))
            return false
        }
        return result
    }

    private func follow(
        _ value: EJSONValue?, parentIsArray: Bool, from position: Int, _ body: (EJSONValue?, Bool) -> Bool
    ) -> Bool {
        guard position < parts.count else {
            return body(value, parentIsArray && value?.isArray == true)
        }
        guard let value, value.isIndexable else {
            return parentIsArray ? false : body(nil, false)
        }
        let part = parts[position]
        if let (child, isArray) = Self.child(of: value, part),
            follow(child, parentIsArray: isArray, from: position + 1, body)
        {
            return true
        }
        if case .array(let elements) = value, !(part.index != nil && forSort) {
            for element in elements where element.isPlainObject {
                if let (child, _) = Self.child(of: element, part),
                    follow(child, parentIsArray: false, from: position + 1, body)
                {
                    return true
                }
            }
        }
        return false
    }

    /// A part looked up in an object, or in an array by index (`nil`: an array without that index, no branch).
    @inline(__always)
    static func child(of value: EJSONValue, _ part: Part) -> (value: EJSONValue?, rootIsArray: Bool)? {
        switch value {
        case .array(let elements):
            guard let index = part.index, index < elements.count else { return nil }
            // minimongo checks the bound with the number but reads `array["01"]`: undefined, a branch all the same.
            return (part.isCanonicalIndex ? elements[index] : nil, true)
        case .object(let object):
            return (object[part.name], false)
        default:
            return (nil, false)
        }
    }
}

extension EJSONValue {
    var isArray: Bool {
        if case .array = self { return true }
        return false
    }

    /// A plain object (not a date, binary, regular expression or custom type).
    var isPlainObject: Bool {
        if case .object = self { return true }
        return false
    }

    /// minimongo's `isIndexable`: an array or a plain object.
    var isIndexable: Bool {
        switch self {
        case .array, .object: return true
        default: return false
        }
    }
}
