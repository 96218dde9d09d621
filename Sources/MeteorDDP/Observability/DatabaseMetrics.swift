import CoreMetrics
import Dispatch
import NIOConcurrencyHelpers

/// The cache's swift-metrics (a client's ``Database``, when its ``ClientMetrics`` record): transactions committed,
/// the time from a commit to its `databaseDidChange` notification, and the documents in the cache, in all and per
/// collection. Made only when a backend records, so a database without one does no metrics work at all.
///
/// The document counts are meters moved by each commit's difference, not gauges: the clients of one process sharing a
/// series add up. At most ``collectionSeriesLimit`` collections get a series of their own (a server names the
/// collections: a hostile one must not make the backend's series grow without bound); the others count in the total
/// only.
final class DatabaseMetrics: Sendable {
    /// How many collections get a `meteor_ddp_collection_documents` series of their own.
    static let collectionSeriesLimit = 64

    let transactions: Counter
    let notificationLag: Timer
    let documents: Meter
    private let factory: any MetricsFactory
    private let base: [(String, String)]
    /// The per-collection meters made so far (at most ``collectionSeriesLimit``). Protected by its lock.
    private let collectionMeters = NIOLockedValueBox<[String: Meter]>([:])

    init(factory: any MetricsFactory, base: [(String, String)]) {
        self.factory = factory
        self.base = base
        transactions = Counter(label: "meteor_ddp_cache_transactions_total", dimensions: base, factory: factory)
        notificationLag = Timer(
            label: "meteor_ddp_notification_lag_duration", dimensions: base, preferredDisplayUnit: .milliseconds,
            factory: factory)
        documents = Meter(label: "meteor_ddp_cache_documents", dimensions: base, factory: factory)
    }

    /// A transaction that changed something committed: the collections whose document counts moved, by how much.
    func committed(_ moves: [(collection: String, by: Int)]) {
        transactions.increment()
        var total = 0
        for (collection, by) in moves where by != 0 {
            total += by
            meter(for: collection)?.move(by: by)
        }
        documents.move(by: total)
    }

    /// The meter of `collection`, made on first use while fewer than ``collectionSeriesLimit`` exist (the backend's
    /// factory is called outside the lock).
    private func meter(for collection: String) -> Meter? {
        let (existing, room) = collectionMeters.withLockedValue {
            ($0[collection], $0.count < Self.collectionSeriesLimit)
        }
        if let existing { return existing }
        guard room else { return nil }
        let made = Meter(
            label: "meteor_ddp_collection_documents", dimensions: base + [("collection", collection)], factory: factory)
        return collectionMeters.withLockedValue { meters in
            if let raced = meters[collection] { return raced }
            guard meters.count < Self.collectionSeriesLimit else { return nil }
            meters[collection] = made
            return made
        }
    }

    /// The commit of a change set `committedAt` (``ClientMetrics/now()``) is being posted now.
    func notificationPosted(committedAt: UInt64) {
        notificationLag.recordNanoseconds(Int64(clamping: ClientMetrics.now() &- committedAt))
    }
}

/// The document counts a database last reported to its ``DatabaseMetrics``, by collection. Protected by the
/// database's write lock: each commit's moves are decided under it, then reported after it.
struct ReportedDocumentCounts {
    private var counts: [String: Int] = [:]

    /// How the counts of `collections` moved in `snapshot`, the committed state.
    mutating func moves(of collections: some Sequence<String>, in snapshot: DatabaseSnapshot)
        -> [(collection: String, by: Int)]
    {
        var moves: [(collection: String, by: Int)] = []
        for collection in collections {
            let now = snapshot.documentCount(in: collection)
            let before = counts[collection] ?? 0
            guard now != before else { continue }
            if now == 0 { counts.removeValue(forKey: collection) } else { counts[collection] = now }
            moves.append((collection, now - before))
        }
        return moves
    }
}
