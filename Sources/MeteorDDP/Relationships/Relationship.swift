import EJSON

/// A relationship between the documents of two typed collections, mapped to reference fields (Meteor iOS's
/// relationships; in a Meteor web app, `Todos.find({listId: list._id})` written by hand).
///
/// For example:
/// ```swift
/// struct TodoList: Codable, Sendable { var _id: String?; var name: String }
/// struct Todo: Codable, Sendable { var _id: String?; var listId: String; var text: String }
/// let lists = client.collection("lists", as: TodoList.self)
/// let todos = client.collection("todos", as: Todo.self)
/// let listOfTodo = todos.toOne(lists, idIn: "listId")          // a todo's list
/// let todosOfList = lists.toMany(todos, referencedBy: "listId") // a list's todos, the inverse
/// for entry in try todosOfList.find([:], FindOptions(sort: ["name": 1])) {
///     print(entry.value.name, entry.related.map(\.text))
/// }
/// ```
///
/// A reference is a document id: a string, an `ObjectID` or a number (any value Meteor takes as an `_id`), in a
/// top-level field. A reference to a document the cache does not hold (not published, removed, or never there) reads
/// as absent, never as an error; so does a reference field that is missing, `null` or not an id (an array in a to-one
/// field included: unlike a Mongo selector on that field, a reference names one document).
///
/// ## Concurrency
/// Reads may run on any thread; each read sees one committed snapshot of both collections.
public struct Relationship<Source: Codable & Sendable, Target: Codable & Sendable>: Sendable {
    /// Where the relationship is stored.
    public typealias Storage = RelationshipStorage

    /// The collection the relationship starts from.
    public let source: TypedCollection<Source>
    /// The collection of the related documents.
    public let target: TypedCollection<Target>
    /// Where the reference is stored.
    public let storage: Storage
    /// The array field of the other side's documents that mirrors the reference, when the relationship is stored both
    /// ways (Meteor iOS's two-way referencing): for `idIn` and `idsIn`, the target's array of the ids of the sources
    /// naming it (a list's `todoIds`); for `referencedBy`, the source's array of the ids of the targets naming it.
    /// `nil`: stored one way. Reads follow ``storage``; writes through ``link(_:to:)`` and ``unlink(_:from:)`` keep
    /// both.
    public let mirror: String?

    /// The related documents of the source document with `id` (``Document/id``: an ObjectID's 24 hex digits),
    /// decoded. To-one: none or one. `referencedBy`: the documents naming `id`, as `options` sort, skip, limit and
    /// project them (Meteor's `find({field: id}, options)`; the source document need not be in the cache). `idsIn`:
    /// in the array's order, each once; empty when the source document is absent. `options` apply to `referencedBy`
    /// only.
    ///
    /// - Throws: `DecodingError` for a document that does not decode; ``QueryError`` for options minimongo refuses.
    public func related(to id: String, _ options: FindOptions = FindOptions()) throws -> [Target] {
        let snapshot = database.snapshot
        let related: [Document]
        if case .referencedBy(let field) = storage {
            related = try Self.referring(to: [id], field: field, in: snapshot, target.name, options)[0]
        } else if let document = snapshot.document(DocumentKey(collectionName: source.name, documentID: id)) {
            related = try relatedDocuments(of: [document], in: snapshot, options)[0]
        } else {
            related = []
        }
        return try related.map(TypedCollection<Target>.decode)
    }

    /// The related documents of the source document with this ObjectID, as for a string id.
    public func related(to id: ObjectID, _ options: FindOptions = FindOptions()) throws -> [Target] {
        try related(to: id.hexString, options)
    }

    /// The source documents matching a Mongo selector, in the order `options` give, each with its related documents,
    /// decoded; both collections read from one snapshot. References are read before `options.fields` projects the
    /// source documents. `relatedOptions` sort, skip, limit and project each source's related documents for
    /// `referencedBy`; to-one and `idsIn` results keep their own order and ignore them.
    ///
    /// - Throws: `DecodingError` for a document that does not decode; ``QueryError`` for a selector or sort
    ///   minimongo refuses.
    public func find(
        _ selector: EJSONValue = [:], _ options: FindOptions = FindOptions(),
        relatedOptions: FindOptions = FindOptions()
    ) throws -> [Related<Source, Target>] {
        let snapshot = database.snapshot
        let query = try Query(selector, options)
        var unprojected = query
        unprojected.fields = nil
        let sources = unprojected.evaluate(snapshot.allDocuments(in: source.name))
        let related = try relatedDocuments(of: sources, in: snapshot, relatedOptions)
        return try zip(query.project(sources), related).map { document, related in
            Related(
                id: document.id, value: try TypedCollection<Source>.decode(document),
                related: try related.map(TypedCollection<Target>.decode))
        }
    }

    init(source: TypedCollection<Source>, target: TypedCollection<Target>, storage: Storage, mirror: String?) {
        precondition(
            source.untyped.client === target.untyped.client,
            "a relationship joins two collections of one client (\(source.name), \(target.name))")
        self.source = source
        self.target = target
        self.storage = storage
        self.mirror = mirror
    }

    // MARK: - Resolving references

    var database: Database { source.untyped.client.database }

    /// The related documents of each of `sources`, in their order.
    private func relatedDocuments(
        of sources: [Document], in snapshot: DatabaseSnapshot, _ options: FindOptions
    ) throws(QueryError) -> [[Document]] {
        if case .referencedBy(let field) = storage {
            return try Self.referring(to: sources.map(\.id), field: field, in: snapshot, target.name, options)
        }
        return sources.map { document in storage.targetIDs(of: document).compactMap { targetDocument($0, in: snapshot) }
        }
    }

    /// For each of `ids`, the documents of `collection` whose `field` names it, as `options` give them: one pass over
    /// the collection, grouped by the id they name.
    private static func referring(
        to ids: [String], field: String, in snapshot: DatabaseSnapshot, _ collection: String, _ options: FindOptions
    ) throws(QueryError) -> [[Document]] {
        let wanted = Set(ids)
        var groups: [String: [Document]] = [:]
        for document in snapshot.allDocuments(in: collection) {
            guard let id = RelationshipStorage.documentID(named: document[field]), wanted.contains(id) else { continue }
            groups[id, default: []].append(document)
        }
        let order = try Query([:], options)
        return ids.map { order.evaluate(groups[$0] ?? []) }
    }

    private func targetDocument(_ id: String, in snapshot: DatabaseSnapshot) -> Document? {
        snapshot.document(DocumentKey(collectionName: target.name, documentID: id))
    }

}

/// Where a ``Relationship`` is stored: which documents hold the reference, in which field.
public enum RelationshipStorage: Sendable, Equatable {
    /// The source document's `field` holds the target's id (to-one: a todo's `listId`).
    case idIn(field: String)
    /// The target documents' `field` holds the source's id (to-many, the inverse of a to-one: a list's todos through
    /// each todo's `listId`).
    case referencedBy(field: String)
    /// The source document's `field` holds an array of target ids, in order (many-to-many: a post's `tagIds`).
    case idsIn(field: String)

    /// The ids of the targets a source document names, in order, each once (`idIn`, `idsIn`; empty for
    /// `referencedBy`, whose references are in the targets).
    func targetIDs(of source: Document) -> [String] {
        switch self {
        case .idIn(let field):
            return Self.documentID(named: source[field]).map { [$0] } ?? []
        case .idsIn(let field):
            guard case .array(let values)? = source[field] else { return [] }
            var seen = Set<String>()
            return values.compactMap { value in
                guard let id = Self.documentID(named: value), seen.insert(id).inserted else { return nil }
                return id
            }
        case .referencedBy:
            return []
        }
    }

    /// The cache's id (``Document/id``) a reference field's value names, or `nil` when it names none.
    static func documentID(named value: EJSONValue?) -> String? {
        guard let value, MongoID.isID(value) else { return nil }
        return MongoID.documentID(value)
    }
}

/// A source document with its related documents, decoded (``Relationship/find(_:_:relatedOptions:)``).
public struct Related<Source: Sendable, Target: Sendable>: Sendable {
    /// The source document's id (``Document/id``).
    public let id: String
    /// The source document.
    public let value: Source
    /// Its related documents (to-one: none or one).
    public let related: [Target]
}

extension TypedCollection {
    /// A to-one relationship: each document's `field` holds the id of a document of `target` (a todo's `listId`);
    /// with `mirror`, each target also holds the ids of the documents naming it in that array field (a list's
    /// `todoIds`).
    public func toOne<Target>(_ target: TypedCollection<Target>, idIn field: String, mirroredIn mirror: String? = nil)
        -> Relationship<Model, Target>
    {
        Relationship(source: self, target: target, storage: .idIn(field: field), mirror: mirror)
    }

    /// A to-many relationship, the inverse of a to-one: the documents of `target` whose `field` holds this
    /// collection's document's id (a list's todos through each todo's `listId`); with `mirror`, each document of this
    /// collection also holds its targets' ids in that array field (a list's `todoIds`).
    public func toMany<Target>(
        _ target: TypedCollection<Target>, referencedBy field: String, mirroredIn mirror: String? = nil
    ) -> Relationship<Model, Target> {
        Relationship(source: self, target: target, storage: .referencedBy(field: field), mirror: mirror)
    }

    /// A to-many (many-to-many) relationship: each document's `field` holds an array of ids of documents of `target`
    /// (a post's `tagIds`); with `mirror`, each target also holds the ids of the documents naming it in that array
    /// field (a tag's `postIds`).
    public func toMany<Target>(
        _ target: TypedCollection<Target>, idsIn field: String, mirroredIn mirror: String? = nil
    ) -> Relationship<Model, Target> {
        Relationship(source: self, target: target, storage: .idsIn(field: field), mirror: mirror)
    }
}
