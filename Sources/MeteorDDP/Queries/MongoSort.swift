import EJSON

/// A Mongo sort specifier with minimongo's semantics (sorter.js): `{createdAt: -1, "owner.name": 1}`, or
/// `[["createdAt", "desc"], "title"]`. Values compare in Mongo's type order (minimongo's `_cmp`); a document whose key
/// is an array sorts by its smallest element ascending and its largest descending, and keys reached through the same
/// array are taken from the same element (minimongo's "min key"). Ties keep no particular order; ``Query`` breaks
/// them by id.
public struct MongoSort: Sendable {
    /// One sort key.
    public struct Key: Sendable, Equatable {
        /// The (dotted) field path.
        public let path: String
        public let ascending: Bool

        public init(path: String, ascending: Bool) {
            self.path = path
            self.ascending = ascending
        }
    }

    /// The keys, most significant first.
    public let keys: [Key]
    private let lookups: [FieldLookup]
    /// The query's collation: strings compare with it (minimongo's `Sorter(spec, collator)`).
    var collator: Collator?

    /// Sorts by `keys`.
    public init(keys: [Key]) throws(QueryError) {
        for key in keys {
            if key.path.isEmpty { throw QueryError("sort keys must be non-empty") }
            if key.path.hasPrefix("$") { throw QueryError("unsupported sort key: \(key.path)") }
        }
        self.keys = keys
        lookups = keys.map { FieldLookup($0.path, forSort: true) }
    }

    /// Parses a sort specifier: an object of `path: ±1`, or an array of paths and `[path, "asc"|"desc"]` pairs.
    ///
    /// - Throws: ``QueryError`` with minimongo's message.
    public init(_ specifier: EJSONValue) throws(QueryError) {
        var keys: [Key] = []
        switch specifier {
        case .object(let object):
            for (path, direction) in object { keys.append(Key(path: path, ascending: Self.isAscending(direction))) }
        case .array(let elements):
            for element in elements {
                switch element {
                case .string(let path):
                    keys.append(Key(path: path, ascending: true))
                case .array(let pair):
                    keys.append(
                        Key(path: pair.first?.stringValue ?? "", ascending: pair.count < 2 || pair[1] != "desc"))
                default:
                    throw QueryError("sort keys must be non-empty")
                }
            }
        default:
            throw QueryError("Bad sort specification: \(EJSON.stringify(specifier))")
        }
        try self.init(keys: keys)
    }

    /// JavaScript's `direction >= 0`.
    private static func isAscending(_ direction: EJSONValue) -> Bool {
        switch direction {
        case .number(let number): return number >= 0
        case .bool, .null: return true
        case .string(let text): return text.isEmpty || (Double(text).map { $0 >= 0 } ?? false)
        default: return false
        }
    }

    // MARK: - Comparing

    /// Negative when `a` sorts first, positive when `b` does, zero when their keys are equivalent.
    func compare(_ a: Document, _ b: Document) -> Int {
        compare(MatchRoot.document(a), .document(b))
    }

    func compare(_ a: MatchRoot, _ b: MatchRoot) -> Int {
        // Documents whose keys reach no array (the usual case) compare key by key, each looked up only if needed.
        for index in keys.indices {
            guard let x = simpleValue(a, index), let y = simpleValue(b, index) else {
                return compareKeys(minKey(a), minKey(b))
            }
            let order = EJSONOrdering.compare(x, y, collator: collator)
            if order != 0 { return keys[index].ascending ? order : -order }
        }
        return 0
    }

    func compareKeys(_ a: [EJSONValue?], _ b: [EJSONValue?]) -> Int {
        for index in keys.indices {
            let order = EJSONOrdering.compare(a[index], b[index], collator: collator)
            if order != 0 { return keys[index].ascending ? order : -order }
        }
        return 0
    }

    /// The key's value when the path reaches no array: `.some(value)` (`.some(nil)` for missing); `nil` otherwise.
    private func simpleValue(_ root: MatchRoot, _ index: Int) -> EJSONValue?? {
        let parts = lookups[index].parts
        var value: EJSONValue?
        switch root {
        case .document(let document): value = parts[0].isID ? MongoID.parse(document.id) : document[parts[0].name]
        case .value(.object(let object)): value = object[parts[0].name]
        case .value: return nil
        }
        for part in parts.dropFirst() {
            switch value {
            case .object(let object)?: value = object[part.name]
            case .array?: return nil
            default: return .some(nil)
            }
        }
        if case .array? = value { return nil }
        return .some(value)
    }

    /// minimongo's `_getMinKeyFromDoc`: of the keys the document's arrays give, the one that sorts first.
    func minKey(_ root: MatchRoot) -> [EJSONValue?] {
        // Per sort key: its values by the array indices that lead to them ([] when no array was used).
        let valuesByPath: [[(indices: [Int], value: EJSONValue?)]] = lookups.map { lookup in
            var values = lookup.sortBranches(of: root)
            if values.isEmpty { values = [([], nil)] }
            return values
        }
        // The array paths every key reaching an array shares; keys that reach none have one value for all paths.
        var paths: [[Int]]?
        for values in valuesByPath where !(values.count == 1 && values[0].indices.isEmpty) {
            let these = values.map(\.indices)
            if let known = paths, Set(known) != Set(these) {
                // Parallel arrays (minimongo refuses to sort them): each key takes its own smallest value.
                return independentMinKey(valuesByPath)
            }
            paths = paths ?? these
        }
        guard let paths else { return valuesByPath.map { $0[0].value } }
        var best: [EJSONValue?]?
        for path in paths {
            let key = valuesByPath.map { values -> EJSONValue? in
                if values.count == 1, values[0].indices.isEmpty { return values[0].value }
                return values.first { $0.indices == path }?.value
            }
            if best == nil || compareKeys(key, best!) < 0 { best = key }
        }
        return best!
    }

    private func independentMinKey(_ valuesByPath: [[(indices: [Int], value: EJSONValue?)]]) -> [EJSONValue?] {
        zip(keys, valuesByPath).map { key, values -> EJSONValue? in
            let best: EJSONValue?? = values.map(\.value).min { a, b in
                let order = EJSONOrdering.compare(a, b, collator: collator)
                return key.ascending ? order < 0 : order > 0
            }
            return best ?? EJSONValue?.none
        }
    }
}

extension FieldLookup {
    /// minimongo's lookup with each branch's array indices (numeric parts that index an array included), arrays not
    /// expanded.
    func branchesWithIndices(of root: MatchRoot) -> [(value: EJSONValue?, dontIterate: Bool, indices: [Int])] {
        var result: [(value: EJSONValue?, dontIterate: Bool, indices: [Int])] = []
        guard let (value, rootIsArray) = root.first(parts[0]) else { return result }
        collectUnexpanded(value, parentIsArray: rootIsArray, indices: [], from: 1, into: &result)
        return result
    }

    private func collectUnexpanded(
        _ value: EJSONValue?, parentIsArray: Bool, indices: [Int], from position: Int,
        into result: inout [(value: EJSONValue?, dontIterate: Bool, indices: [Int])]
    ) {
        guard position < parts.count else {
            result.append((value, parentIsArray && value?.isArray == true, indices))
            return
        }
        guard let value, value.isIndexable else {
            if !parentIsArray { result.append((nil, false, indices)) }
            return
        }
        let part = parts[position]
        if let (child, isArray) = Self.child(of: value, part) {
            collectUnexpanded(
                child, parentIsArray: isArray, indices: isArray ? indices + [part.index!] : indices, from: position + 1,
                into: &result)
        }
        if case .array(let elements) = value, !(part.index != nil && forSort) {
            for (index, element) in elements.enumerated() where element.isPlainObject {
                if let (child, _) = Self.child(of: element, part) {
                    collectUnexpanded(
                        child, parentIsArray: false, indices: indices + [index], from: position + 1, into: &result)
                }
            }
        }
    }

    /// minimongo's `expandArraysInBranches(lookup(doc), true)` with each value's array indices: the branches of a
    /// sort key, arrays replaced by their elements.
    func sortBranches(of root: MatchRoot) -> [(indices: [Int], value: EJSONValue?)] {
        branchesWithIndices(of: root).flatMap { value, dontIterate, indices -> [(indices: [Int], value: EJSONValue?)] in
            guard case .array(let elements)? = value, !dontIterate else { return [(indices, value)] }
            return elements.enumerated().map { (indices + [$0.offset], $0.element) }
        }
    }
}
