import Atomics
import Foundation

/// New versions of documents made on a second thread for a large batch of updates, while the writer applies the
/// batch: the writer's share of each update shrinks to finding the document and installing a version made for it.
///
/// The helper reads only the snapshot the transaction started from (immutable, kept alive here) and the updates of
/// the chunks it claimed (the writer moves an update out of the batch only once no helper can read it: its own
/// chunks, and the helper's once `done`). A version is made against the document as it was in that snapshot, and the
/// writer takes it only if the document it finds is still that very version (an update earlier in the batch, or earlier
/// in the transaction, may have written it since): otherwise the writer makes the version itself, as it always did.
/// Nothing the helper does can change what is written, only who computes it.
///
/// The batch is cut into chunks, claimed in order by whichever thread gets there first: the writer claims the chunk
/// it reaches if the helper has not (and makes its versions itself, as without a helper); a chunk the helper claimed
/// the writer waits for, briefly (installing made versions is cheaper than making them, so the writer soon catches
/// up with the helper, and from then on both threads are busy all the time). If the helper is slow to finish (the
/// thread was descheduled, say), the writer stops waiting and makes the chunk itself. ``finish()`` never waits: the
/// batch lives in memory of its own (``CacheUpdateBatch``) that the helper keeps alive while it reads it, and whoever
/// lets go of it last frees it.
final class VersionPreparation: @unchecked Sendable {
    // @unchecked because: the helper reads `updates` only in chunks it claimed, before setting their `done` flag
    // (releasing); the writer moves updates out of its own chunks and of chunks it saw `done` (acquiring); claims go
    // through one atomic counter; `prepared` slots of a chunk are written by the helper before it sets the chunk's
    // `done` flag (releasing) and read by the writer only after seeing it set (acquiring).

    /// A new version made for an update, and where the version it was made from was found.
    struct PreparedVersion {
        /// Where the snapshot had the document: its stored version (compared by identity only; the snapshot keeps it
        /// alive) and its place, which spares the writer its own lookup while the document has not moved
        /// (``DocumentTable/locate(_:epoch:knownAt:)``).
        let found: DocumentTable.Location
        let document: Document

        /// The prepared version if it was made from `current` (the document as the writer finds it).
        func document(for current: Document?) -> Document? {
            found.document?.toOpaque() == current.map { Unmanaged.passUnretained($0.storage).toOpaque() }
                ? document : nil
        }
    }

    /// Batches smaller than this are not worth a second thread.
    static let minimumBatch = 512
    static let chunkSize = 16
    /// How long the writer waits for a chunk the helper claimed before making it itself.
    static let patienceNanoseconds: UInt64 = 500_000

    /// Whether this machine has a second processor to prepare on.
    static let isWorthwhile = ProcessInfo.processInfo.activeProcessorCount > 1

    /// Whether a second thread would have enough to make for `updates`: at least ``minimumBatch`` changes. An `added`
    /// carries its new document already (data messages are decoded packed), so a flood of them would only keep a
    /// helper busy on a core the frames' decoding needs.
    static func isWorthwhile(for updates: UnsafeBufferPointer<CacheUpdate>) -> Bool {
        guard isWorthwhile, updates.count >= minimumBatch else { return false }
        var changes = 0
        for index in updates.indices {
            if case .changed = updates[index] { changes += 1 }
            if changes >= minimumBatch { return true }
        }
        return false
    }

    /// The batch, kept alive (with the updates still in it) until the helper and the writer both let go of it.
    private let batch: CacheUpdateBatch
    private var updates: UnsafeMutableBufferPointer<CacheUpdate> { batch.updates }
    private let snapshot: DatabaseSnapshot
    private let prepared: UnsafeMutableBufferPointer<PreparedVersion?>
    private let done: [ManagedAtomic<Bool>]
    /// Called by the helper with each chunk it claimed, before making it (tests stall the helper here).
    private let helperClaimed: (@Sendable (Int) -> Void)?
    /// The first chunk nobody has claimed (chunks are claimed in order).
    private let nextUnclaimed = ManagedAtomic<Int>(0)
    /// The helper's state: `notStarted`, `running`, `finished`.
    private let helperState = ManagedAtomic<Int>(HelperState.notStarted)
    /// Entered until the helper's work item has returned (for tests: ``waitForHelper()``).
    private let helperRunning = DispatchGroup()

    private enum HelperState {
        static let notStarted = 0
        static let running = 1
        static let finished = 2
    }

    /// The number of chunks, `0..<chunkCount`.
    var chunkCount: Int { done.count }

    /// The updates of `chunk`.
    func indices(ofChunk chunk: Int) -> Range<Int> {
        chunk * Self.chunkSize..<min((chunk + 1) * Self.chunkSize, updates.count)
    }

    /// Starts preparing `batch` against `snapshot` on a global queue.
    init(
        batch: CacheUpdateBatch, snapshot: DatabaseSnapshot,
        helperClaimed: (@Sendable (Int) -> Void)? = nil
    ) {
        self.batch = batch
        self.snapshot = snapshot
        self.helperClaimed = helperClaimed
        let count = batch.updates.count
        prepared = .allocate(capacity: count)
        prepared.initialize(repeating: nil)
        let chunkCount = (count + Self.chunkSize - 1) / Self.chunkSize
        done = (0..<chunkCount).map { _ in ManagedAtomic(false) }
        helperRunning.enter()
        // The work item keeps `self`, and so the batch, alive until the helper has stopped reading it.
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            defer { helperRunning.leave() }
            prepareChunks()
        }
    }

    deinit {
        prepared.baseAddress!.deinitialize(count: prepared.count)
        prepared.deallocate()
    }

    // MARK: - Writer

    /// Who makes a chunk's versions, as the writer finds it on reaching the chunk (in order).
    enum ChunkClaim: Equatable {
        /// The writer claimed it: the helper never reads it.
        case writers
        /// The helper made its versions (they may be used) and no longer reads it.
        case prepared
        /// The helper claimed it and has not finished within the writer's patience: the writer makes the versions
        /// itself, reading the updates in place (the helper may still be reading them).
        case helperStillMaking
    }

    /// Called by the writer on reaching `chunk` (in order): whether it is the writer's, made by the helper, or still
    /// being made by the helper after the writer's patience ran out.
    func claimForWriter(_ chunk: Int) -> ChunkClaim {
        let (claimed, _) = nextUnclaimed.compareExchange(expected: chunk, desired: chunk + 1, ordering: .relaxed)
        if claimed { return .writers }
        // The helper's: it is making it now, or has made it.
        var deadline: UInt64 = 0
        var spins = 0
        while !done[chunk].load(ordering: .acquiring) {
            spins += 1
            guard spins % 64 == 0 else { continue }
            let now = DispatchTime.now().uptimeNanoseconds
            if deadline == 0 {
                deadline = now + Self.patienceNanoseconds
            } else if now > deadline {
                return .helperStillMaking
            }
            sched_yield()
        }
        return .prepared
    }

    /// The version prepared for the update at `index`, in a chunk ``claimForWriter(_:)`` found `.prepared`.
    func version(at index: Int) -> PreparedVersion? { prepared[index] }

    /// Stops the helper: it claims no more chunks (one it is making, it finishes), and one that has not started never
    /// starts. Returns at once: the helper keeps the batch alive while it reads it.
    func finish() {
        nextUnclaimed.store(chunkCount, ordering: .relaxed)
        _ = helperState.compareExchange(
            expected: HelperState.notStarted, desired: HelperState.finished, ordering: .acquiringAndReleasing)
    }

    /// Waits until the helper's work item has returned. For tests.
    func waitForHelper() {
        helperRunning.wait()
    }

    // MARK: - Helper

    private func prepareChunks() {
        let (started, _) = helperState.compareExchange(
            expected: HelperState.notStarted, desired: HelperState.running, ordering: .acquiringAndReleasing)
        guard started else { return }
        defer { helperState.store(HelperState.finished, ordering: .releasing) }
        // The table last looked in: a batch is mostly one collection's (the snapshot keeps the table's memory alive).
        var table: (name: String, table: DocumentTable)?
        while true {
            let chunk = nextUnclaimed.loadThenWrappingIncrement(ordering: .relaxed)
            guard chunk < chunkCount else { return }
            helperClaimed?(chunk)
            for index in indices(ofChunk: chunk) { prepared[index] = prepare(updates[index], table: &table) }
            done[chunk].store(true, ordering: .releasing)
        }
    }

    private func prepare(_ update: CacheUpdate, table: inout (name: String, table: DocumentTable)?) -> PreparedVersion?
    {
        /// Where the snapshot has the document, and the document (`nil`: it has none).
        func find(_ key: DocumentKey) -> (DocumentTable.Location, Document)? {
            if table?.name != key.collectionName {
                table = (key.collectionName, snapshot.documents(in: key.collectionName))
            }
            let found = table!.table.locate(key.documentID, epoch: 0)
            return found.document.map { (found, Document(storage: $0.takeUnretainedValue())) }
        }
        switch update {
        case .added(let key, let fields):
            // A new document needs nothing made: the update carries it.
            guard let (found, current) = find(key) else { return nil }
            return PreparedVersion(found: found, document: current.setting(fields))
        case .changed(let key, let fields, let cleared):
            guard let (found, current) = find(key) else { return nil }
            return PreparedVersion(found: found, document: current.setting(fields, clearing: cleared))
        case .replaced, .removed:
            return nil
        }
    }
}

/// A batch of cache updates in memory of its own, shared by the writer that applies it and the helper that prepares
/// versions for it (``VersionPreparation``): freed, with whatever updates are still in it, by whichever of the two
/// lets go of it last, so the writer never waits for the helper to stop reading it.
final class CacheUpdateBatch: @unchecked Sendable {
    // @unchecked because: the writer and the helper share `updates` under VersionPreparation's chunk claims.
    let updates: UnsafeMutableBufferPointer<CacheUpdate>

    /// Moves the updates out of `array` (which is left empty).
    init(moving array: inout [CacheUpdate]) {
        updates = .allocate(capacity: array.count)
        array.withUnsafeMutableBufferPointer { source in
            _ = updates.moveInitialize(fromContentsOf: source)
            // The array still counts its elements: trivial placeholders for it to destroy.
            source.initialize(repeating: .vacated)
        }
        array.removeAll()
    }

    deinit {
        updates.deinitialize()
        updates.deallocate()
    }
}
