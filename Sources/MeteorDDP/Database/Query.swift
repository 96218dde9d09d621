import EJSON

/// Which documents of a collection, in which order, how many: a Mongo selector or a Swift filter, Mongo sort keys,
/// `skip` and `limit`.
///
/// For example:
/// ```swift
/// let open = try Query(["listId": .string(listID), "checked": ["$ne": true]], FindOptions(sort: ["createdAt": -1]))
/// let swiftOnly = Query(filter: { $0["done"] != true }, sort: [.ascending("createdAt")], limit: 50)
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

    /// Which documents match, as Swift code (`nil`: all). Applied after ``selector``.
    public var filter: (@Sendable (Document) -> Bool)?
    /// Which documents match, as a Mongo selector (`nil`: all). A selector set here is read as `find` reads it, as
    /// minimongo's cursor reads its own: under the query's ``collation``; without one, a selector naming a single id
    /// takes minimongo's id fast path (`skip` other than 0 leaves nothing, `limit` is not looked at).
    public var selector: MongoSelector? {
        get { compiledSelector }
        set {
            // Compiling a selector again under a collation refuses nothing the plain compilation took.
            guard let newValue, (try? adopt(newValue.selector)) != nil else {
                compiledSelector = newValue
                isIDFastPath = false
                return
            }
        }
    }
    /// The order, compared as Mongo does (type order, arrays by their smallest or largest element). Documents that
    /// tie, and every document when there are no sort keys, keep the order in which they came into the cache (the
    /// server's `added` frames, inserts), as minimongo's results do.
    public var sort: [SortDescriptor] {
        didSet {
            sorter = MongoSort(unchecked: sort)
            sorter.collator = collator
        }
    }
    /// How many documents of the sorted result to leave out first (negative: all but that many of the last, as
    /// JavaScript's `slice`, which minimongo uses).
    public var skip: Int
    /// At most this many documents (`nil`: no limit; negative: all but the last that many, minimongo's `slice`).
    public var limit: Int?
    /// Which fields the result's documents keep (`nil`: all). Matching and sorting see every field.
    public var fields: MongoProjection?
    /// How strings compare, in the selector and the sort (`FindOptions.collation`; `nil`: code unit by code unit).
    public var collation: Collation? { collator?.collation }
    private var compiledSelector: MongoSelector?
    private var sorter: MongoSort
    private var collator: Collator?
    /// The selector names one id (minimongo's id fast path): `skip` other than 0 leaves nothing, `limit` is not
    /// looked at, as `find` does.
    private var isIDFastPath = false

    /// Creates a query from Swift code.
    public init(
        filter: (@Sendable (Document) -> Bool)? = nil, sort: [SortDescriptor] = [], skip: Int = 0, limit: Int? = nil
    ) {
        self.filter = filter
        self.sort = sort
        self.skip = max(0, skip)
        self.limit = limit
        sorter = MongoSort(unchecked: sort)
    }

    /// Creates a query from a Mongo selector and Meteor's find options, as `collection.find(selector, options)`.
    ///
    /// - Throws: ``QueryError`` for a selector, sort specifier or collation minimongo would refuse.
    public init(_ selector: EJSONValue, _ options: FindOptions = FindOptions()) throws(QueryError) {
        let sort = try options.sort.map { specifier throws(QueryError) in try MongoSort(specifier) }
        let collator = try options.collation.map { collation throws(QueryError) in try Collator(collation) }
        // `limit: 0` means no limit, as in Meteor and Mongo; negative bounds are minimongo's (see `skip`, `limit`).
        self.init(
            sort: (sort?.keys ?? []).map { SortDescriptor(path: $0.path, ascending: $0.ascending) },
            limit: options.limit.flatMap { $0 != 0 ? $0 : nil })
        skip = options.skip
        self.collator = collator
        sorter.collator = collator
        try adopt(selector)
        self.fields = try options.fields.map { fields throws(QueryError) in try MongoProjection(fields) }
    }

    /// Compiles `selector` as minimongo's cursor does with its collation. A selector naming one id (`{_id: 0}` too)
    /// takes the id fast path in `find` (not under a collation); a live query of it matches that id (as the scalar
    /// selector does), so that it shows what `find` shows.
    private mutating func adopt(_ selector: EJSONValue) throws(QueryError) {
        let fastPathID = collator == nil ? MongoID.id(namedBy: selector) : nil
        var compiled = try MongoSelector(fastPathID ?? selector, collator: collator)
        compiled.selector = selector
        compiledSelector = compiled
        isIDFastPath = fastPathID != nil
    }

    /// Documents whose field at `path` equals `value`.
    public static func `where`(_ path: String, equals value: EJSONValue) -> Query {
        Query(filter: { $0.value(at: path) == value })
    }

    func matches(_ document: Document) -> Bool {
        (compiledSelector?.matches(document) ?? true) && (filter?(document) ?? true)
    }

    /// Whether `a` sorts before `b`.
    func areInIncreasingOrder(_ a: Document, _ b: Document) -> Bool {
        if !sort.isEmpty {
            let order = sorter.compare(a, b)
            if order != 0 { return order < 0 }
        }
        return a.arrivedBefore(b)
    }

    /// The window `skip` and `limit` leave of `count` sorted documents: minimongo's
    /// `results.slice(skip, limit ? limit + skip : results.length)`, JavaScript's `slice` included (a negative
    /// bound counts from the end: `limit: -2` leaves out the last two).
    func window(count: Int) -> Range<Int> {
        if isIDFastPath { return skip == 0 ? 0..<count : 0..<0 }
        func bound(_ position: Int) -> Int { position < 0 ? max(count + position, 0) : min(position, count) }
        let start = bound(skip)
        let end =
            limit.map { limit in
                let (sum, overflow) = limit.addingReportingOverflow(skip)
                return overflow ? (limit > 0 ? count : 0) : bound(sum)
            } ?? count
        return start..<max(start, end)
    }

    func evaluate<S: Sequence>(_ documents: S) -> [Document] where S.Element == Document {
        var result = documents.filter(matches)
        result.sort(by: areInIncreasingOrder)
        let window = window(count: result.count)
        let visible = window.count == result.count ? result : Array(result[window])
        return project(visible)
    }

    /// The documents with only the fields ``fields`` keeps.
    func project(_ documents: [Document]) -> [Document] {
        guard let fields else { return documents }
        return documents.map { fields.apply($0) }
    }
}

/// Meteor's options of `find` and `findOne`: `sort`, `skip`, `limit`, `fields`, `collation`.
public struct FindOptions: Sendable {
    /// A Mongo sort specifier (`{createdAt: -1}` or `[["createdAt", "desc"]]`).
    public var sort: EJSONValue?
    public var skip: Int
    /// At most this many documents; `nil` or `0`: no limit (Meteor's rule).
    public var limit: Int?
    /// A projection (`{title: 1}` or `{secret: 0}`).
    public var fields: EJSONValue?
    /// How strings compare in the selector and the sort (Meteor 3.5): see ``Collation``.
    public var collation: Collation?

    public init(
        sort: EJSONValue? = nil, skip: Int = 0, limit: Int? = nil, fields: EJSONValue? = nil,
        collation: Collation? = nil
    ) {
        self.sort = sort
        self.skip = skip
        self.limit = limit
        self.fields = fields
        self.collation = collation
    }
}

extension MongoSort {
    /// Sort keys from Swift code: paths are not checked (an empty or `$` path sorts as a missing field).
    init(unchecked descriptors: [Query.SortDescriptor]) {
        do {
            try self.init(keys: descriptors.map { Key(path: $0.path, ascending: $0.ascending) })
        } catch {
            try! self.init(
                keys: descriptors.filter { !$0.path.isEmpty && !$0.path.hasPrefix("$") }.map {
                    Key(path: $0.path, ascending: $0.ascending)
                })
        }
    }
}
