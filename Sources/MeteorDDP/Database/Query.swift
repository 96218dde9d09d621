import EJSON

/// Which documents of a collection, in which order, how many.
///
/// For example:
/// ```swift
/// let open = Query(filter: { $0["done"] != true }, sort: [.ascending("createdAt")], limit: 50)
/// let lovelace = Query.where("name", equals: "Ada Lovelace")
/// ```
public struct Query: Sendable {
    /// A sort key: a field path and a direction.
    public struct SortDescriptor: Sendable {
        /// The (dotted) field path.
        public let path: String
        /// Ascending or descending.
        public let ascending: Bool

        /// Ascending by `path`.
        public static func ascending(_ path: String) -> SortDescriptor { SortDescriptor(path: path, ascending: true) }
        /// Descending by `path`.
        public static func descending(_ path: String) -> SortDescriptor { SortDescriptor(path: path, ascending: false) }
    }

    /// Which documents match (`nil`: all).
    public var filter: (@Sendable (Document) -> Bool)?
    /// The order; ties are broken by id so the order is total.
    public var sort: [SortDescriptor]
    /// At most this many documents (`nil`: no limit).
    public var limit: Int?

    /// Creates a query.
    public init(filter: (@Sendable (Document) -> Bool)? = nil, sort: [SortDescriptor] = [], limit: Int? = nil) {
        self.filter = filter
        self.sort = sort
        self.limit = limit
    }

    /// Documents whose field at `path` equals `value`.
    public static func `where`(_ path: String, equals value: EJSONValue) -> Query {
        Query(filter: { $0.value(at: path) == value })
    }

    func matches(_ document: Document) -> Bool {
        filter?(document) ?? true
    }

    /// Whether `a` sorts before `b`.
    func areInIncreasingOrder(_ a: Document, _ b: Document) -> Bool {
        for descriptor in sort {
            let order = EJSONOrdering.compare(a.value(at: descriptor.path), b.value(at: descriptor.path))
            if order != 0 { return descriptor.ascending ? order < 0 : order > 0 }
        }
        return a.hasSmallerID(than: b)
    }

    func evaluate<S: Sequence>(_ documents: S) -> [Document] where S.Element == Document {
        var result = documents.filter(matches)
        result.sort(by: areInIncreasingOrder)
        if let limit, result.count > limit { result.removeSubrange(limit...) }
        return result
    }
}

/// Mongo's order of values of different types (minimongo's `LocalCollection._f._cmp`): missing and null first, then
/// numbers, strings, objects, arrays, binary data, booleans, dates.
enum EJSONOrdering {
    static func compare(_ a: EJSONValue?, _ b: EJSONValue?) -> Int {
        let (ra, rb) = (rank(a), rank(b))
        if ra != rb { return ra < rb ? -1 : 1 }
        switch (a, b) {
        case (.number(let x)?, .number(let y)?): return x < y ? -1 : x > y ? 1 : 0
        case (.string(let x)?, .string(let y)?): return x < y ? -1 : x > y ? 1 : 0
        case (.bool(let x)?, .bool(let y)?): return x == y ? 0 : (x ? 1 : -1)
        case (.date(let x)?, .date(let y)?): return x < y ? -1 : x > y ? 1 : 0
        case (.array(let x)?, .array(let y)?):
            for (p, q) in zip(x, y) {
                let order = compare(p, q)
                if order != 0 { return order }
            }
            return x.count < y.count ? -1 : x.count > y.count ? 1 : 0
        case (.binary(let x)?, .binary(let y)?):
            if x.count != y.count { return x.count < y.count ? -1 : 1 }
            return x.lexicographicallyPrecedes(y) ? -1 : (x == y ? 0 : 1)
        default:
            let (x, y) = (a.map { EJSON.stringify($0, canonical: true) } ?? "", b.map { EJSON.stringify($0, canonical: true) } ?? "")
            return x < y ? -1 : x > y ? 1 : 0
        }
    }

    private static func rank(_ value: EJSONValue?) -> Int {
        switch value {
        case nil, .null?: return 0
        case .number?: return 1
        case .string?: return 2
        case .object?, .custom?: return 3
        case .array?: return 4
        case .binary?: return 5
        case .bool?: return 6
        case .date?: return 7
        }
    }
}
