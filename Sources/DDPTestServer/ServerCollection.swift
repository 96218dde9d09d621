import EJSON
import MeteorDDP
import OrderedCollections

/// A collection of the test server: an in-memory store whose every change is pushed to the publications that
/// observe it. Confined to the server queue (use ``DDPTestServer/perform(_:)`` from elsewhere).
public final class ServerCollection: @unchecked Sendable {
    // @unchecked because `documents` is confined to the server queue.

    /// The collection's name.
    public let name: String
    /// How its inserts make ids.
    public let idGeneration: IDGeneration
    /// Documents by id (as DDP carries it: `MongoID.stringify` of the `_id`), in insertion order. Confined to the
    /// server queue.
    public private(set) var documents: OrderedDictionary<String, EJSONObject> = [:]
    weak var server: DDPTestServer?

    init(name: String, server: DDPTestServer, idGeneration: IDGeneration) {
        self.name = name
        self.server = server
        self.idGeneration = idGeneration
    }

    /// The document with `id`.
    public func document(_ id: String) -> EJSONObject? { documents[id] }

    /// The documents matching `filter`, with their ids.
    public func find(_ filter: (String, EJSONObject) -> Bool = { _, _ in true }) -> [(id: String, fields: EJSONObject)]
    {
        documents.filter { filter($0.key, $0.value) }.map { ($0.key, $0.value) }
    }

    /// Inserts a document; throws Meteor's 409 for a duplicate id.
    @discardableResult
    public func insert(_ fields: EJSONObject, id: String) throws -> String {
        guard documents[id] == nil else {
            throw MeteorError(error: .number(409), reason: "Duplicate key error: _id \(id)")
        }
        var stored = fields
        stored.removeValue(forKey: "_id")
        documents[id] = stored
        server?.documentChanged(collection: name, id: id, before: nil, after: stored)
        return id
    }

    /// Updates the document with `id` with a Mongo modifier; returns how many documents changed.
    @discardableResult
    public func update(_ id: String, _ modifier: EJSONValue) throws -> Int {
        guard let before = documents[id] else { return 0 }
        let after: EJSONObject
        do {
            after = try MongoModifier(modifier).applyKeepingID(id, to: before)
        } catch {
            throw MeteorError(error: .number(400), reason: "\(error)")
        }
        documents[id] = after
        server?.documentChanged(collection: name, id: id, before: before, after: after)
        return 1
    }

    /// Meteor's `update(selector, modifier, {multi, upsert, insertedId})`: the first matching document (every one with
    /// `multi`), or an inserted one when none matches and `upsert` is set. Returns how many documents changed.
    @discardableResult
    public func update(
        selector: EJSONValue, _ modifier: EJSONValue, options: EJSONObject = [:], newID: () -> EJSONValue
    ) throws -> Int {
        try upsert(selector: selector, modifier, options: options, newID: newID).numberAffected
    }

    /// ``update(selector:_:options:newID:)`` with the inserted document's `_id`, if it inserted one.
    public func upsert(
        selector: EJSONValue, _ modifier: EJSONValue, options: EJSONObject = [:], newID: () -> EJSONValue
    ) throws -> (numberAffected: Int, insertedID: EJSONValue?) {
        let compiled: MongoSelector
        let parsed: MongoModifier
        do {
            compiled = try MongoSelector(selector)
            parsed = try MongoModifier(modifier)
        } catch {
            throw MeteorError(error: .number(400), reason: error.message)
        }
        var matching: [String] = []
        for (id, fields) in documents where compiled.matches(withID(id, fields)) {
            matching.append(id)
            if !(options["multi"]?.boolValue ?? false) { break }
        }
        for id in matching {
            guard let before = documents[id] else { continue }
            let after: EJSONObject
            do {
                after = try parsed.applyKeepingID(
                    id, to: before, arrayIndices: compiled.arrayIndices(in: withID(id, before)))
            } catch {
                throw MeteorError(error: .number(400), reason: error.message)
            }
            documents[id] = after
            server?.documentChanged(collection: name, id: id, before: before, after: after)
        }
        guard matching.isEmpty, options["upsert"]?.boolValue == true else { return (matching.count, nil) }
        var fields: EJSONObject
        do {
            fields = try compiled.upsertDocument(applying: parsed)
        } catch {
            throw MeteorError(error: .number(400), reason: error.message)
        }
        let id = fields["_id"].flatMap { $0.isTruthy ? $0 : nil } ?? options["insertedId"] ?? newID()
        fields["_id"] = id
        try insert(fields, id: MongoID.stringify(id))
        return (1, id)
    }

    /// Removes the documents matching a Mongo selector; returns how many.
    @discardableResult
    public func remove(selector: EJSONValue) throws -> Int {
        let compiled: MongoSelector
        do { compiled = try MongoSelector(selector) } catch {
            throw MeteorError(error: .number(400), reason: error.message)
        }
        let ids = documents.filter { compiled.matches(withID($0.key, $0.value)) }.map(\.key)
        for id in ids { remove(id) }
        return ids.count
    }

    private func withID(_ id: String, _ fields: EJSONObject) -> EJSONObject {
        var document = fields
        document["_id"] = MongoID.parse(id) ?? .string(id)
        return document
    }

    /// Removes the document with `id`; returns how many were removed.
    @discardableResult
    public func remove(_ id: String) -> Int {
        guard let before = documents.removeValue(forKey: id) else { return 0 }
        server?.documentChanged(collection: name, id: id, before: before, after: nil)
        return 1
    }

    /// Removes every document.
    public func removeAll() {
        for id in Array(documents.keys) { remove(id) }
    }
}
