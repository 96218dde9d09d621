import EJSON
import MeteorDDP

/// A reactive set of documents a publication returns: documents of `collection` matching `filter`, kept up to date
/// as the collection changes.
public struct Cursor: Sendable {
    /// The collection's name.
    public let collection: String
    /// Which documents (by id and fields).
    public let filter: @Sendable (String, EJSONObject) -> Bool

    /// A cursor over a collection.
    public init(collection: String, filter: @escaping @Sendable (String, EJSONObject) -> Bool = { _, _ in true }) {
        self.collection = collection
        self.filter = filter
    }

    /// A cursor over the documents matching a Mongo selector (Meteor's `Collection.find(selector)`), matched by the
    /// client's own `MongoSelector`.
    public init(collection: String, selector: EJSONValue) throws(QueryError) {
        let compiled = try MongoSelector(selector)
        self.init(collection: collection) { id, fields in
            var document = fields
            document["_id"] = MongoID.parse(id) ?? .string(id)
            return compiled.matches(document)
        }
    }
}

/// What a publication handler sees, and how it publishes by hand (Meteor's `this` in `Meteor.publish`).
///
/// A handler either returns cursors (the server sends their documents, then `ready`, and keeps them reactive) or
/// returns none and calls ``added(_:id:fields:)`` … ``ready()`` itself. Confined to the server queue.
public final class PublicationContext: @unchecked Sendable {
    // @unchecked because it is confined to the server queue.

    /// The publication's parameters.
    public let params: [EJSONValue]
    /// The logged-in user of the session, if any.
    public let userID: String?
    /// The subscription id.
    public let subscriptionID: String
    weak var session: ServerSession?
    var stopHandlers: [() -> Void] = []

    init(params: [EJSONValue], userID: String?, subscriptionID: String, session: ServerSession) {
        self.params = params
        self.userID = userID
        self.subscriptionID = subscriptionID
        self.session = session
    }

    /// Publishes a document.
    public func added(_ collection: String, id: String, fields: EJSONObject) {
        session?.publish(.added(collection: collection, id: id, fields: fields), by: subscriptionID)
    }

    /// Publishes changed fields of a document.
    public func changed(_ collection: String, id: String, fields: EJSONObject, cleared: [String] = []) {
        session?.publish(.changed(collection: collection, id: id, fields: fields, cleared: cleared), by: subscriptionID)
    }

    /// Stops publishing a document.
    public func removed(_ collection: String, id: String) {
        session?.publish(.removed(collection: collection, id: id), by: subscriptionID)
    }

    /// Marks the subscription ready (sends `ready`).
    public func ready() {
        session?.markReady(subscriptionID)
    }

    /// Ends the subscription with an error (sends `nosub` with it).
    public func error(_ error: MeteorError) {
        session?.stopSubscription(subscriptionID, error: error)
    }

    /// Runs `handler` when the subscription stops.
    public func onStop(_ handler: @escaping () -> Void) {
        stopHandlers.append(handler)
    }
}

/// A publication handler: returns cursors, or an empty array after publishing by hand through the context.
public typealias PublicationHandler = (PublicationContext) throws -> [Cursor]
