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
