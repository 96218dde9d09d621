import EJSON

/// A Mongo selector, compiled once, with minimongo's semantics: `{listId: id, checked: {$ne: true}}`,
/// `{score: {$gte: 10}, $or: [{a: 1}, {"b.c": /x/i}]}`, an id string as shorthand for `{_id: id}`.
///
/// For example:
/// ```swift
/// let open = try MongoSelector(["listId": .string(listID), "checked": ["$ne": true]])
/// open.matches(document)
/// ```
///
/// Supported: `$eq $ne $gt $gte $lt $lte $in $nin $and $or $nor $not $exists $type $regex $options $mod $all $size
/// $elemMatch $comment $bitsAllSet $bitsAnySet $bitsAllClear $bitsAnyClear`, regular-expression values, dotted paths
/// through arrays and numeric path parts, and a ``Collation`` (through ``Query`` and ``FindOptions``). Not supported
/// (a ``QueryError``): `$where` (JavaScript) and minimongo's geospatial operators (`$near`, `$geoWithin`);
/// `$geoIntersects` is an unrecognized operator, as in minimongo.
public struct MongoSelector: Sendable {
    /// The selector as given.
    public internal(set) var selector: EJSONValue
    private let matcher: DocumentMatcher

    /// Compiles a selector.
    ///
    /// - Throws: ``QueryError`` with minimongo's message for a selector it would refuse.
    public init(_ selector: EJSONValue) throws(QueryError) {
        try self.init(selector, collator: nil)
    }

    /// Compiles a selector whose strings compare under `collator` (a query's ``Collation``).
    init(_ selector: EJSONValue, collator: Collator?) throws(QueryError) {
        self.selector = selector
        let compiler = SelectorCompiler(collator: collator)
        switch selector {
        case .string, .number, .custom(type: "oid", _):
            // An id: minimongo's `_selectorIsId`. Under a collation, `{_id: id}` (`"abc"` finds `_id: "ABC"`).
            if collator != nil {
                matcher = try compiler.documentSelector(["_id": selector])
                return
            }
            let id = selector
            matcher = { root in
                switch root {
                case .document(let document):
                    return MongoID.parse(document.id).map { MongoEquality.equal($0, id) } ?? false
                case .value(let value): return value["_id"].map { MongoEquality.equal($0, id) } ?? false
                }
            }
        case .object(let object):
            // `{_id: falsy}` is probably a mistake: it matches nothing, as in minimongo.
            if let id = object["_id"], !id.isTruthy {
                matcher = { _ in false }
            } else {
                matcher = try compiler.documentSelector(object)
            }
        case .null, .bool(false):
            // A falsy selector is probably a mistake: it matches nothing (minimongo); `true` is refused below.
            matcher = { _ in false }
        case .date, .regularExpression:
            // An object without keys of its own to minimongo: no condition, every document matches.
            matcher = { _ in true }
        default:
            throw QueryError("Invalid selector: \(Self.javaScriptString(selector))")
        }
    }

    /// The selector that matches every document (`{}`).
    public static let all: MongoSelector = try! MongoSelector([:])

    /// Whether a document matches.
    public func matches(_ document: Document) -> Bool {
        matcher(.document(document))
    }

    /// Whether a document given as EJSON (with its `_id` among the fields) matches.
    public func matches(_ document: EJSONObject) -> Bool {
        matcher(.value(.object(document)))
    }

    /// `String(value)` in JavaScript, as minimongo's messages write values (`Invalid selector: 1,2`): arrays and
    /// binary data joined with commas (null as nothing), objects as `[object Object]`.
    static func javaScriptString(_ value: EJSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool(let flag): return flag ? "true" : "false"
        case .string(let text): return text
        case .number: return EJSON.stringify(value)
        case .array(let elements):
            return elements.map { element in
                if case .null = element { return "" }
                return javaScriptString(element)
            }.joined(separator: ",")
        case .binary(let bytes): return bytes.map(String.init).joined(separator: ",")
        case .regularExpression(let pattern, let flags): return "/\(pattern)/\(flags)"
        case .object, .date, .custom: return "[object Object]"
        }
    }
}
