import Dispatch
import EJSON
import NIOConcurrencyHelpers

/// A live related result at one moment, decoded (``RelatedLiveQuery``).
public struct RelatedLiveQuerySnapshot<Source: Sendable, Target: Sendable>: Sendable {
    /// The source documents' ids, in the result's order.
    public let ids: [String]
    /// The source documents with their related documents, in the same order.
    public let values: [Related<Source, Target>]
    /// How the result differs from the previous snapshot's (indexes into ``values``): an entry is updated when its
    /// source document or any of its related documents changed, or one joined or left it.
    ///
    /// The first snapshot's diff is empty.
    public let diff: LiveQueryDiff
}

/// A relationship's query kept up to date: the matching source documents, each with its related documents, changed
/// when a document on either side changes, is added or removed, or a reference moves (a todo moved to another list
/// leaves one list's entry and joins the other's), in one snapshot per transaction.
///
/// For example:
/// ```swift
/// let todosOfList = lists.toMany(todos, referencedBy: "listId")
/// for try await snapshot in try todosOfList.observe([:], FindOptions(sort: ["name": 1])).snapshots {
///     print(snapshot.values.map { ($0.value.name, $0.related.count) }, snapshot.diff)
/// }
/// ```
///
/// A transaction costs the entries it concerns, found through an index of the references both ways, plus a pass
/// over the source window's ids; documents are decoded once per version (a document related to several sources
/// once).
///
/// ## Concurrency
/// Snapshots are computed on the database's notification queue, in commit order, and decoded by their consumer.
/// ``stop()`` (or releasing the live query) ends the observation.
public final class RelatedLiveQuery<Source: Codable & Sendable, Target: Codable & Sendable>: Sendable {
    let core: RelatedLiveQueryCore
    let decoder = RelatedDecoder<Source, Target>()
    private let database: Database

    init(_ relationship: Relationship<Source, Target>, query: Query, relatedQuery: Query, database: Database) {
        let core = RelatedLiveQueryCore(
            sourceCollection: relationship.source.name, query: query, targetCollection: relationship.target.name,
            storage: relationship.storage, relatedQuery: relatedQuery)
        self.core = core
        self.database = database
        database.liveQueries.withLockedValue { $0[ObjectIdentifier(core)] = core }
        // Seeded on the notification queue, so no commit between seeding and registration is missed or doubled.
        database.notificationQueue.async { core.seed(database.snapshot) }
    }

    deinit { stop() }

    /// The snapshots, decoded: the current one first, then one per transaction that changes the result (a slow
    /// consumer gets the newest, with the diff from the one it took last). Ends with the `DecodingError` of a document
    /// that does not decode, or when the live query stops or the iterating task is cancelled. The iteration keeps the
    /// live query alive.
    public var snapshots: RelatedLiveQuerySnapshots<Source, Target> { RelatedLiveQuerySnapshots(liveQuery: self) }

    /// How many documents were decoded so far (each document version once).
    public var decodeCount: Int { decoder.decodeCount }

    /// Stops the live query.
    public func stop() {
        _ = database.liveQueries.withLockedValue { $0.removeValue(forKey: ObjectIdentifier(core)) }
        core.finish()
    }

    /// Calls `handler` with every snapshot (undecoded), the current one first, on `queue`.
    func onChange(on queue: DispatchQueue, _ handler: @escaping @Sendable (RelatedSnapshot) -> Void)
        -> ObservationToken
    {
        core.receivers.onChange(on: queue, notificationQueue: database.notificationQueue, handler)
    }

    func register(_ receiver: SnapshotReceivers<RelatedSnapshot>.Receiver, token: Int) {
        core.receivers.register(receiver, token: token, on: database.notificationQueue)
    }

    func unregister(token: Int) {
        core.receivers.unregister(token, on: database.notificationQueue)
    }
}

/// The snapshots of a ``RelatedLiveQuery`` as an `AsyncSequence` (see ``RelatedLiveQuery/snapshots``). A consumer
/// holds at most one pending snapshot, the newest.
public struct RelatedLiveQuerySnapshots<Source: Codable & Sendable, Target: Codable & Sendable>: AsyncSequence,
    Sendable
{
    public typealias Element = RelatedLiveQuerySnapshot<Source, Target>
    let liveQuery: RelatedLiveQuery<Source, Target>

    public func makeAsyncIterator() -> AsyncIterator {
        let subscriber = LiveResultSubscriber<RelatedSnapshot>()
        let token = liveQuery.core.receivers.makeToken()
        liveQuery.register(.init(receive: subscriber.receive, finish: subscriber.finish), token: token)
        return AsyncIterator(liveQuery: liveQuery, subscriber: subscriber, token: token)
    }

    /// Iterates the snapshots; ends when the live query stops, the task is cancelled or a document does not decode.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let liveQuery: RelatedLiveQuery<Source, Target>
        let subscriber: LiveResultSubscriber<RelatedSnapshot>
        let token: Int
        private var ended = false

        init(liveQuery: RelatedLiveQuery<Source, Target>, subscriber: LiveResultSubscriber<RelatedSnapshot>, token: Int)
        {
            self.liveQuery = liveQuery
            self.subscriber = subscriber
            self.token = token
        }

        public mutating func next() async throws -> Element? {
            guard !ended else { return nil }
            let subscriber = self.subscriber
            let next = await withTaskCancellationHandler {
                await subscriber.next()
            } onCancel: {
                subscriber.finish()
            }
            guard let next else {
                ended = true
                liveQuery.unregister(token: token)
                return nil
            }
            do {
                return try liveQuery.decoder.decode(next)
            } catch {
                ended = true
                subscriber.finish()
                liveQuery.unregister(token: token)
                throw error
            }
        }
    }
}

/// Decodes related snapshots, each document version once (sources and targets cached apart).
final class RelatedDecoder<Source: Decodable & Sendable, Target: Decodable & Sendable>: Sendable {
    private let sources = DecodedDocuments<Source>()
    private let targets = DecodedDocuments<Target>()

    var decodeCount: Int { sources.decodeCount + targets.decodeCount }

    func decode(_ snapshot: RelatedSnapshot) throws -> RelatedLiveQuerySnapshot<Source, Target> {
        var sourcePass = sources.beginPass(expecting: snapshot.entries.count)
        var targetPass = targets.beginPass(expecting: snapshot.entries.reduce(0) { $0 + $1.related.count })
        let values = try snapshot.entries.map { entry in
            Related(
                id: entry.source.id, value: try sources.value(of: entry.source, in: &sourcePass),
                related: try entry.related.map { try targets.value(of: $0, in: &targetPass) })
        }
        sources.end(sourcePass)
        targets.end(targetPass)
        return RelatedLiveQuerySnapshot(ids: snapshot.entries.map(\.source.id), values: values, diff: snapshot.diff)
    }
}

extension Relationship {
    /// The source documents matching a Mongo selector, each with its related documents, kept up to date (see
    /// ``find(_:_:relatedOptions:)`` for what `options` and `relatedOptions` do).
    ///
    /// - Throws: ``QueryError`` for a selector, sort or projection minimongo refuses.
    public func observe(
        _ selector: EJSONValue = [:], _ options: FindOptions = FindOptions(),
        relatedOptions: FindOptions = FindOptions()
    ) throws(QueryError) -> RelatedLiveQuery<Source, Target> {
        RelatedLiveQuery(
            self, query: try Query(selector, options), relatedQuery: try Query([:], relatedOptions),
            database: source.untyped.client.database)
    }
}
