import EJSON
import MeteorDDP
import OrderedCollections

/// A collection of the test server: an in-memory store whose every change is pushed to the publications that
/// observe it. Confined to the server queue (use ``DDPTestServer/perform(_:)`` from elsewhere).
public final class ServerCollection: @unchecked Sendable {
    // @unchecked because `documents` is confined to the server queue.

    /// The collection's name.
    public let name: String
    /// Documents by id, in insertion order. Confined to the server queue.
    public private(set) var documents: OrderedDictionary<String, EJSONObject> = [:]
    weak var server: DDPTestServer?

    init(name: String, server: DDPTestServer) {
        self.name = name
        self.server = server
    }

    /// The document with `id`.
    public func document(_ id: String) -> EJSONObject? { documents[id] }

    /// The documents matching `filter`, with their ids.
    public func find(_ filter: (String, EJSONObject) -> Bool = { _, _ in true }) -> [(id: String, fields: EJSONObject)] {
        documents.filter { filter($0.key, $0.value) }.map { ($0.key, $0.value) }
    }

    /// Inserts a document; throws Meteor's 409 for a duplicate id.
    @discardableResult
    public func insert(_ fields: EJSONObject, id: String) throws -> String {
        guard documents[id] == nil else { throw MeteorError(error: .number(409), reason: "Duplicate key error: _id \(id)") }
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
