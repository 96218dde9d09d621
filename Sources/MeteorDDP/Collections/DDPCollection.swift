import EJSON

/// A collection as the app uses it: reads from the local cache, and writes through Meteor's `/<name>/insert`,
/// `/<name>/update` and `/<name>/remove` methods whose built-in stubs change the cache at once.
///
/// For example:
/// ```swift
/// let todos = client.collection("todos")
/// let id = try await todos.insert(["text": "milk", "done": false])   // visible locally at once
/// _ = try await todos.update(id, ["$set": ["done": true]])
/// for await snapshot in try todos.observe([:], FindOptions(sort: ["text": 1])).snapshots {
///     print(snapshot.documents.count)
/// }
/// ```
///
/// ## Concurrency
/// Reads may run on any thread (**Snapshot Reads**); writes may be made from any thread or task.
public struct DDPCollection: Sendable {
    /// The collection's name.
    public let name: String
    let client: DDPClient
    /// How the collection makes the ids of the documents it inserts.
    public let idGeneration: IDGeneration

    private var local: LocalCollection { client.database.collection(name) }

    // MARK: - Reading

    /// The document with this id (``Document/id``, the form DDP carries), if present.
    public func document(id: String) -> Document? { local.document(id: id) }
    /// The document with this ObjectID, if present.
    public func document(id: ObjectID) -> Document? { local.document(id: id.hexString) }
    /// Every document.
    public var documents: [Document] { local.documents }
    /// How many documents there are.
    public var count: Int { local.count }
    /// The documents matching a query.
    public func find(_ query: Query) -> [Document] { local.find(query) }
    /// A live query over this collection.
    public func observe(_ query: Query = Query()) -> LiveQuery { local.observe(query) }
    /// The documents matching a Mongo selector (Meteor's `find(selector, options).fetch()`).
    public func find(_ selector: EJSONValue = [:], _ options: FindOptions = FindOptions()) throws(QueryError)
        -> [Document]
    {
        try local.find(selector, options)
    }
    /// The first document matching a Mongo selector (Meteor's `findOne`).
    public func findOne(_ selector: EJSONValue = [:], _ options: FindOptions = FindOptions()) throws(QueryError)
        -> Document?
    {
        try local.findOne(selector, options)
    }
    /// How many documents `find(selector, options)` gives (`skip`, `limit` and a collation count).
    public func count(_ selector: EJSONValue, _ options: FindOptions = FindOptions()) throws(QueryError) -> Int {
        try local.count(selector, options)
    }
    /// A live query over the documents matching a Mongo selector.
    public func observe(_ selector: EJSONValue, _ options: FindOptions = FindOptions()) throws(QueryError) -> LiveQuery
    {
        try local.observe(selector, options)
    }

    // MARK: - Writing

    /// Inserts a document: locally at once, then on the server. The id is `fields["_id"]` (a string or an
    /// `ObjectID`) or a new random one of the collection's ``idGeneration``.
    ///
    /// - Returns: The document's id (``Document/id``: an ObjectID's 24 hex digits) at once; `completion` gets the
    ///   server's outcome.
    /// - Throws: ``QueryError`` for a field name minimongo refuses (`$x`, `.a`, `a.`, `a..b`; nothing is sent, as
    ///   `update` refuses an invalid modifier), ``MethodError`` when a document with that id
    ///   already exists locally.
    @discardableResult
    public func insert(
        _ fields: EJSONObject, completion: @escaping @Sendable (Result<String, any Error>) -> Void = { _ in }
    ) throws -> String {
        try MongoModifier.assertValidFieldNames(.object(fields))
        var document = EJSONObject(minimumCapacity: fields.count + 1)
        // Meteor's client leaves the id of a top-level insert to the stub's random stream (sending the seed); an id
        // made here, sent with the document, makes the same document on the server and is known before the call.
        let idValue = MongoID.givenID(of: fields) ?? idGeneration.newID()
        let id = MongoID.documentID(idValue)
        document["_id"] = idValue
        for (key, value) in fields where key != "_id" { document[key] = value }
        // Inside the app's own transaction the call is made after it commits (see `DDPClient.call`): no stub value yet.
        let deferred = client.database.isInTransactionOnCurrentThread
        let stubValue = try client.call(
            "/\(name)/insert", params: [.object(document)], options: MethodOptions(returnStubValue: true)
        ) { result in
            completion(result.map { _ in id })
        }
        guard deferred || stubValue.map({ MongoEquality.equal($0, idValue) }) == true else {
            throw MethodError(
                methodName: "/\(name)/insert", kind: .stubFailed,
                stubErrorDescription: "a document with id \(id) already exists")
        }
        return id
    }

    /// Inserts a document and returns its id once the server confirmed it and its data is visible.
    @discardableResult
    public func insert(_ fields: EJSONObject) async throws -> String {
        try await withCancellableContinuation { resume in
            try insert(fields) { resume($0.mapError { $0 }) }
        }
    }

    /// Updates the document with `id` (``Document/id``) with a Mongo modifier; returns how many documents the server
    /// changed.
    @discardableResult
    public func update(_ id: String, _ modifier: EJSONValue, options: UpdateOptions = UpdateOptions()) async throws
        -> Int
    {
        try await update(["_id": Self.idValue(id)], modifier, options: options)
    }

    /// Updates the document with this ObjectID with a Mongo modifier; returns how many documents the server changed.
    @discardableResult
    public func update(_ id: ObjectID, _ modifier: EJSONValue, options: UpdateOptions = UpdateOptions()) async throws
        -> Int
    {
        try await update(["_id": id.ejsonValue], modifier, options: options)
    }

    /// Updates documents with a Mongo modifier (Meteor's `collection.update(selector, modifier, options)`): the stub
    /// changes the cache at once, the server then does the same. As in Meteor, code outside a method may only name
    /// one document by id (`"id"` or `{_id: "id"}`); stubs may use any selector through
    /// ``MethodInvocationContext/collection(_:)``.
    ///
    /// - Returns: How many documents the server changed (or inserted, with `upsert`).
    /// - Throws: `MeteorError` 403 for a selector other than an id (nothing is sent), ``QueryError`` for an invalid
    ///   modifier, the server's ``MeteorError`` for its refusal.
    @discardableResult
    public func update(_ selector: EJSONValue, _ modifier: EJSONValue, options: UpdateOptions = UpdateOptions())
        async throws -> Int
    {
        try Self.checkUpdate(selector, modifier)
        let result = try await client.call(
            "/\(name)/update", params: [Self.idSelector(selector), modifier, .object(options.ejsonValue)])
        return result?.intValue ?? 0
    }

    /// Updates the document `selector` names, or inserts one when there is none (Meteor's `collection.upsertAsync`):
    /// the stub does it in the cache at once, the server then does the same. The inserted document is built from the
    /// selector's `_id` and the modifier (`$setOnInsert` included), as minimongo builds it.
    ///
    /// - Returns: How many documents the server changed or inserted, and the inserted document's id if it inserted
    ///   one (Meteor 3.3.2+; a server that answers with a bare count gives no id).
    /// - Throws: `MeteorError` 403 for a selector other than an id (nothing is sent), ``QueryError`` for an invalid
    ///   modifier, the server's ``MeteorError`` for its refusal (a restricted collection refuses every upsert).
    @discardableResult
    public func upsert(_ selector: EJSONValue, _ modifier: EJSONValue, options: UpdateOptions = UpdateOptions())
        async throws -> UpsertResult
    {
        try Self.checkUpdate(selector, modifier)
        var options = options
        options.upsert = true
        var sent = options.ejsonValue
        sent["_returnObject"] = true
        let result = try await client.call(
            "/\(name)/update", params: [Self.idSelector(selector), modifier, .object(sent)])
        return UpsertResult(result)
    }

    /// Removes the document with `id` (``Document/id``); returns how many documents the server removed.
    @discardableResult
    public func remove(_ id: String) async throws -> Int {
        try await remove(matching: ["_id": Self.idValue(id)])
    }

    /// Removes the document with this ObjectID; returns how many documents the server removed.
    @discardableResult
    public func remove(_ id: ObjectID) async throws -> Int {
        try await remove(matching: ["_id": id.ejsonValue])
    }

    /// Removes documents (Meteor's `collection.remove(selector)`); code outside a method may only name one document
    /// by id, as in Meteor.
    ///
    /// - Throws: `MeteorError` 403 for a selector other than an id (nothing is sent).
    @discardableResult
    public func remove(matching selector: EJSONValue) async throws -> Int {
        guard MongoModifier.documentID(inSelector: selector) != nil else {
            throw MeteorError(
                error: .number(403), reason: "Not permitted. Untrusted code may only remove documents by ID.")
        }
        let result = try await client.call("/\(name)/remove", params: [Self.idSelector(selector)])
        return result?.intValue ?? 0
    }
}

extension DDPCollection {
    /// What Meteor's client checks before an `update` or `upsert` leaves: an id selector (untrusted code), a modifier
    /// minimongo reads.
    static func checkUpdate(_ selector: EJSONValue, _ modifier: EJSONValue) throws {
        guard MongoModifier.documentID(inSelector: selector) != nil else {
            throw MeteorError(
                error: .number(403), reason: "Not permitted. Untrusted code may only update documents by ID.")
        }
        _ = try MongoModifier(modifier)
    }

    /// The `_id` a ``Document/id`` stands for (an ObjectID for 24 hex digits), as the server stores it.
    static func idValue(_ id: String) -> EJSONValue {
        MongoID.parse(id) ?? .string(id)
    }

    /// An id selector as Meteor's client sends it (`"id"` becomes `{_id: "id"}`, Mongo.Collection._rewriteSelector).
    static func idSelector(_ selector: EJSONValue) -> EJSONValue {
        selector.objectValue == nil ? ["_id": selector] : selector
    }
}

/// What an upsert did (minimongo's `{numberAffected, insertedId}`).
public struct UpsertResult: Sendable, Equatable {
    /// How many documents were changed or inserted.
    public var numberAffected: Int
    /// The inserted document's id (``Document/id``), if the upsert inserted one.
    public var insertedID: String?

    public init(numberAffected: Int, insertedID: String? = nil) {
        self.numberAffected = numberAffected
        self.insertedID = insertedID
    }

    /// Reads a `/collection/update` result: the object an upsert with `_returnObject` answers, or a bare count.
    init(_ result: EJSONValue?) {
        switch result {
        case .object(let object)?:
            numberAffected = object["numberAffected"]?.intValue ?? 0
            insertedID = object["insertedId"].flatMap { $0 == .null ? nil : MongoID.documentID($0) }
        default:
            numberAffected = result?.intValue ?? 0
        }
    }

    /// The object minimongo's `update` answers with `_returnObject`.
    var ejsonValue: EJSONValue {
        var object: EJSONObject = ["numberAffected": .number(Double(numberAffected))]
        if let insertedID { object["insertedId"] = MongoID.parse(insertedID) ?? .string(insertedID) }
        return .object(object)
    }
}

/// Meteor's update options.
public struct UpdateOptions: Sendable {
    /// Insert a document when none matches (built from the selector's equality fields and the modifier).
    public var upsert = false
    /// Update every matching document, not just the first.
    public var multi = false
    /// The id an upsert gives the document it inserts (Meteor's `insertedId`).
    public var insertedID: String?

    public init(upsert: Bool = false, multi: Bool = false, insertedID: String? = nil) {
        self.upsert = upsert
        self.multi = multi
        self.insertedID = insertedID
    }

    /// The options as they travel in `/collection/update` params.
    var ejsonValue: EJSONObject {
        var object: EJSONObject = [:]
        if upsert { object["upsert"] = true }
        if multi { object["multi"] = true }
        if let insertedID { object["insertedId"] = .string(insertedID) }
        return object
    }
}

extension DDPClient {
    /// The collection named `name`, with Meteor's built-in `/<name>/insert|update|remove` stubs defined.
    ///
    /// This *declares* the collection (Meteor's `new Mongo.Collection(name)`): all the server's data for it is cached.
    /// Data for collections never declared is cached too, but only up to
    /// ``Configuration/maxDocumentsInUndeclaredCollections`` documents in all, so a server cannot fill memory with
    /// collections nobody reads. Declare collections before subscribing to them.
    ///
    /// - Parameters:
    ///   - name: The collection's name, as the server publishes it.
    ///   - idGeneration: How inserts make ids, as the server's collection does (Meteor's `idGeneration`:
    ///     `.objectID` for `'MONGO'`). The first declaration of a name decides; later ones may leave it out.
    public func collection(_ name: String, idGeneration: IDGeneration? = nil) -> DDPCollection {
        let generation = idGenerations.withLockedValue { generations in
            if let idGeneration, generations[name] == nil { generations[name] = idGeneration }
            return generations[name] ?? .string
        }
        defineCollectionStubs(name)
        queue.async { self.handle(.collectionDeclared(name)) }
        return DDPCollection(name: name, client: self, idGeneration: generation)
    }

    /// How the collection named `name` makes ids (`.string` unless declared otherwise).
    func idGeneration(ofCollection name: String) -> IDGeneration {
        idGenerations.withLockedValue { $0[name] } ?? .string
    }

    private func defineCollectionStubs(_ name: String) {
        let alreadyDefined = stubs.withLockedValue { $0["/\(name)/insert"] != nil }
        guard !alreadyDefined else { return }
        defineStub("/\(name)/insert") { [weak self] context in
            guard let self, case .object(let document)? = context.params.first else { return nil }
            let id =
                MongoID.givenID(of: document)
                ?? self.idGeneration(ofCollection: name).newID(in: context, collection: name)
            return try LocalWrites.insert(document, id: id, into: name, database: self.database)
        }
        defineStub("/\(name)/update") { [weak self] context in
            guard let self, let selector = context.params[0], let modifier = context.params[1] else { return 0 }
            let options = context.params[2]?.objectValue ?? [:]
            let (count, insertedID) = try LocalWrites.upsert(
                selector: selector, modifier: MongoModifier(modifier), options: options,
                newID: { self.idGeneration(ofCollection: name).newID(in: context, collection: name) }, in: name,
                database: self.database)
            // minimongo's `finishUpdate`: the object (with the inserted id, Meteor 3.3.2+) when asked for it.
            guard options["_returnObject"]?.isTruthy == true else { return .number(Double(count)) }
            return UpsertResult(numberAffected: count, insertedID: insertedID.map(MongoID.documentID)).ejsonValue
        }
        defineStub("/\(name)/remove") { [weak self] context in
            guard let self, let selector = context.params.first else { return 0 }
            return .number(Double(try LocalWrites.remove(selector: selector, from: name, database: self.database)))
        }
    }
}
