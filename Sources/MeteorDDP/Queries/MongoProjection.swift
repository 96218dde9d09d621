import EJSON

/// A `fields` projection with minimongo's semantics (`_compileProjection`): `{title: 1, "owner.name": 1}` keeps only
/// those fields, `{secret: 0}` drops them; nested paths reach into objects and into every element of arrays; `_id`
/// may be excluded from an inclusion. A ``Document`` always keeps its ``Document/id``: `_id: 0` removes `_id` from
/// EJSON only.
public struct MongoProjection: Sendable {
    indirect enum Rule: Sendable {
        case leaf
        case tree([String], [String: Rule])
    }

    /// Whether the listed fields are kept (else dropped).
    public let including: Bool
    /// Whether `_id` is kept.
    public let includesID: Bool
    private let keys: [String]
    private let rules: [String: Rule]

    /// Parses a projection.
    ///
    /// - Throws: ``QueryError`` with minimongo's message (mixed inclusion and exclusion, operators, conflicting
    ///   paths, values other than 1, 0, true, false).
    public init(_ fields: EJSONValue) throws(QueryError) {
        guard case .object(let object) = fields else { throw QueryError("fields option must be an object") }
        for (path, value) in object {
            if path.split(separator: ".", omittingEmptySubsequences: false).contains("$") {
                throw QueryError("Minimongo doesn't support $ operator in projections yet.")
            }
            if case .object(let operators) = value,
                ["$elemMatch", "$meta", "$slice"].contains(where: { operators[$0] != nil })
            {
                throw QueryError("Minimongo doesn't support operators in projections yet.")
            }
            switch value {
            case .bool, .number(0), .number(1): break
            default: throw QueryError("Projection values should be one of 1, 0, true, or false")
            }
        }
        includesID = object["_id"].map(\.isTruthy) ?? true
        var paths = object.keys.sorted()
        if !(paths == ["_id"]) && !(paths.contains("_id") && includesID) {
            paths.removeAll { $0 == "_id" }
        }
        var including: Bool?
        for path in paths {
            let rule = object[path]!.isTruthy
            if including == nil { including = rule }
            if including != rule { throw QueryError("You cannot currently mix including and excluding fields.") }
        }
        self.including = including ?? false
        // The rule tree (minimongo's `pathsToTree`), keys in sorted path order.
        var root = Self.Builder()
        for path in paths {
            try root.add(
                path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)[...], fullPath: path)
        }
        (keys, rules) = root.built()
    }

    private struct Builder {
        var order: [String] = []
        var children: [String: Builder?] = [:] // nil: a leaf

        mutating func add(_ parts: ArraySlice<String>, fullPath: String, prefix: String = "") throws(QueryError) {
            let key = parts.first!
            let path = prefix.isEmpty ? key : prefix + "." + key
            if parts.count == 1 {
                if children[key] != nil { throw Self.conflict(fullPath, path) }
                order.append(key)
                children[key] = .some(nil)
                return
            }
            switch children[key] {
            case nil:
                order.append(key)
                var child = Builder()
                try child.add(parts.dropFirst(), fullPath: fullPath, prefix: path)
                children[key] = .some(child)
            case .some(.none):
                throw Self.conflict(fullPath, path)
            case .some(.some(var child)):
                try child.add(parts.dropFirst(), fullPath: fullPath, prefix: path)
                children[key] = .some(child)
            }
        }

        static func conflict(_ current: String, _ another: String) -> QueryError {
            QueryError(
                "both \(current) and \(another) found in fields option, "
                    + "using both of them may trigger unexpected behavior. Did you mean to use only one of them?"
            )
        }

        func built() -> ([String], [String: Rule]) {
            var rules: [String: Rule] = [:]
            for key in order {
                if case .some(.some(let child)) = children[key] {
                    let (keys, childRules) = child.built()
                    rules[key] = .tree(keys, childRules)
                } else {
                    rules[key] = .leaf
                }
            }
            return (order, rules)
        }
    }

    /// The projected fields of a document (without `_id`).
    public func apply(_ document: Document) -> Document {
        guard case .object(let fields) = transform(.object(document.fields), keys: keys[...], rules: rules) else {
            return document
        }
        return Document(id: document.id, fields: fields.filter { $0.key != "_id" })
    }

    /// A document given as EJSON, projected (`_id` kept unless excluded).
    public func apply(_ document: EJSONObject) -> EJSONObject {
        guard case .object(var result) = transform(.object(document), keys: keys[...], rules: rules) else {
            return document
        }
        if includesID, let id = document["_id"] {
            result["_id"] = id
        } else if !includesID {
            result.removeValue(forKey: "_id")
        }
        return result
    }

    private func transform(_ value: EJSONValue, keys: ArraySlice<String>, rules: [String: Rule]) -> EJSONValue {
        if case .array(let elements) = value {
            return .array(elements.map { transform($0, keys: keys, rules: rules) })
        }
        guard case .object(let object) = value else {
            // A scalar inside an array: an inclusion makes it an empty object, as minimongo does; null stays null.
            if case .null = value { return value }
            return including ? .object([:]) : value
        }
        var result: EJSONObject = including ? [:] : object
        for key in keys {
            guard let field = object[key], let rule = rules[key] else { continue }
            switch rule {
            case .tree(let childKeys, let childRules):
                if field.isIndexable {
                    result[key] = transform(field, keys: childKeys[...], rules: childRules)
                }
            case .leaf:
                if including { result[key] = field } else { result.removeValue(forKey: key) }
            }
        }
        return .object(result)
    }
}
