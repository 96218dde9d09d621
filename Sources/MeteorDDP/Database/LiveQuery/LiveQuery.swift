import Foundation
import NIOConcurrencyHelpers

/// The result of a live query at one moment, and how it differs from the previous one.
public struct LiveQuerySnapshot: Sendable {
    /// The matching documents, sorted and limited as the query says.
    public let documents: [Document]
    /// How ``documents`` differs from the previous snapshot's (empty for the first).
    public let diff: LiveQueryDiff
    /// Whether the documents hold local writes the server has not confirmed yet, and whether they are from the
    /// offline store. A snapshot with an empty diff comes when only these change.
    public internal(set) var metadata = ResultMetadata()
}

/// Index changes between two ordered results, like `NSFetchedResultsController` reports them.
public struct LiveQueryDiff: Sendable, Equatable, CustomStringConvertible {
    /// Indexes in the new result of documents that were not in the old one.
    public var inserted: [Int] = []
    /// Indexes in the old result of documents that are not in the new one.
    public var removed: [Int] = []
    /// Documents that changed position: from their index in the old result to their index in the new one.
    public var moved: [Move] = []
    /// Indexes in the new result of documents present in both whose fields changed.
    public var updated: [Int] = []

    /// The non-empty parts: `inserted [0], removed [2]`, or `no change`.
    public var description: String {
        var parts: [String] = []
        if !inserted.isEmpty { parts.append("inserted \(inserted)") }
        if !removed.isEmpty { parts.append("removed \(removed)") }
        if !moved.isEmpty { parts.append("moved " + moved.map { "\($0.from)→\($0.to)" }.joined(separator: ", ")) }
        if !updated.isEmpty { parts.append("updated \(updated)") }
        return parts.isEmpty ? "no change" : parts.joined(separator: ", ")
    }

    /// A document's move.
    public struct Move: Sendable, Equatable {
        /// Its index in the old result.
        public let from: Int
        /// Its index in the new result.
        public let to: Int
    }

    /// Whether nothing changed.
    public var isEmpty: Bool { inserted.isEmpty && removed.isEmpty && moved.isEmpty && updated.isEmpty }
}

/// A query kept up to date: it re-evaluates only the documents each transaction touched.
///
/// For example:
/// ```swift
/// let leaders = database.collection("players").observe(Query(sort: [.descending("score")], limit: 3))
/// for await snapshot in leaders.snapshots {
///     print(snapshot.documents.map(\.id), snapshot.diff)
/// }
/// ```
///
/// ## Concurrency
/// Snapshots are computed and delivered on the database's notification queue, in commit order, never under the
/// write lock. ``stop()`` (or releasing the live query) ends the observation.
public final class LiveQuery: Sendable {
    let core: LiveQueryCore
    private let database: Database

    init(collection: String, query: Query, database: Database) {
        let core = LiveQueryCore(collection: collection, query: query)
        self.database = database
        self.core = core
        database.liveQueries.withLockedValue { $0[ObjectIdentifier(core)] = core }
        // Seeded on the notification queue, so no commit between seeding and registration is missed or doubled.
        database.notificationQueue.async { core.seed(database.snapshot) }
    }

    deinit { stop() }

    /// The current result (empty until the first snapshot was computed).
    public var documents: [Document] { core.current }

    /// Calls `handler` with every snapshot, starting with the current one (empty diff), in commit order, on `queue`
    /// (by default a serial queue of its own): never on the database's notification queue, so a slow handler delays
    /// no one else and the handler may use the database and the client freely.
    ///
    /// - Returns: A token; ``ObservationToken/cancel()`` stops the handler (no call starts after it returns).
    ///   Releasing the token does not stop it: the handler lives as long as the live query.
    @discardableResult
    public func onChange(on queue: DispatchQueue? = nil, _ handler: @escaping @Sendable (LiveQuerySnapshot) -> Void)
        -> ObservationToken
    {
        core.receivers.onChange(
            on: queue ?? DispatchQueue(label: "MeteorDDP.LiveQuery.onChange"),
            notificationQueue: database.notificationQueue, handler)
    }

    /// The snapshots as an async sequence: the current one, then one per change. Each iteration is an independent
    /// consumer; one that falls behind **may coalesce**: it keeps at most one pending snapshot, the newest, whose diff
    /// is recomputed against the snapshot that consumer saw last. The iteration keeps the live query alive and
    /// ends when it is stopped or the iterating task is cancelled.
    public var snapshots: LiveQuerySnapshots { LiveQuerySnapshots(liveQuery: self) }

    /// Registers a receiver on the notification queue, after the seed.
    func register(_ receiver: LiveQueryCore.Receiver, token: Int) {
        core.receivers.register(receiver, token: token, on: database.notificationQueue)
    }

    /// Removes a receiver on the notification queue.
    func unregister(token: Int) {
        core.receivers.unregister(token, on: database.notificationQueue)
    }

    /// Stops observing.
    public func stop() {
        _ = database.liveQueries.withLockedValue { $0.removeValue(forKey: ObjectIdentifier(core)) }
        core.finish()
    }
}
