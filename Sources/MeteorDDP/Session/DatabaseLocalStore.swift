import EJSON

/// The session's ``LocalStore`` over a ``Database`` and its ``DataUpdateBuffer``.
///
/// Updates are collected here and handed to the buffer in one piece per burst of frames (``push()``), or before any
/// other operation, so their order relative to flushes, holds and after-flush callbacks never changes.
/// Confined to the client queue.
final class DatabaseLocalStore: LocalStore, @unchecked Sendable {
    // @unchecked because `pending` is confined to the client queue (every LocalStore call is made on it).
    let database: Database
    let buffer: DataUpdateBuffer
    /// Updates not yet handed to the buffer. Confined to the client queue (checked for exclusive access at run time,
    /// as the core is: a stub, app code, runs on that queue).
    private var pending: [CacheUpdate] = []

    init(database: Database, buffer: DataUpdateBuffer) {
        self.database = database
        self.buffer = buffer
    }

    func enqueue(_ update: consuming CacheUpdate) { pending.append(update) }

    /// Hands the collected updates to the buffer.
    func push() {
        guard !pending.isEmpty else { return }
        let count = pending.count
        buffer.enqueue(taking: &pending)
        // The array is reused for the next burst (as the inbox's are: large ones only on a flood).
        if !IncomingInbox.keepsForReuse(capacity: pending.capacity, count: count) { pending = [] }
    }

    func flush() {
        push()
        buffer.flush()
    }

    func flushIfFree(thenInTheSameTransaction body: () -> Void) -> Bool {
        // Handed over without waking the buffer's queue (which would apply them on its own, before the body).
        if !pending.isEmpty { buffer.enqueue(taking: &pending, signalling: false) }
        return buffer.flushIfFree(thenInTheSameTransaction: body)
    }

    func releaseForInlineFlush(keeping: Set<DocumentKey>) {
        push()
        buffer.release(keeping: keeping, signalling: false)
    }

    func performAfterFlush(_ block: @escaping @Sendable () -> Void) {
        push()
        buffer.performAfterFlush(block)
    }

    var isIdle: Bool { pending.isEmpty && buffer.isIdle }

    func hold(resetting: Bool) {
        push()
        buffer.hold(resetting: resetting)
    }

    func release(keeping: Set<DocumentKey>) {
        push()
        buffer.release(keeping: keeping)
    }

    func runStub<T>(recordingReads: Bool, _ body: () throws -> T) -> Database.RecordedRun<T> {
        push()
        return database.performUpdatesRecordingOriginals(
            markingPendingWrites: true, recordingReads: recordingReads, body)
    }

    func revert(_ originals: [(DocumentKey, EJSONObject?)], settled: [DocumentKey]) {
        guard !originals.isEmpty else { return }
        database.performUpdates {
            database.apply(originals.map { DataUpdate.replaced($0.0, $0.1) })
            database.setPendingWrites(settled, false)
        }
    }

    func settle(_ keys: [DocumentKey]) {
        guard !keys.isEmpty else { return }
        updateMetadataWithNextFlush { $0.setPendingWrites(keys, false) }
    }

    func updateMetadataWithNextFlush(_ update: @escaping @Sendable (Database) -> Void) {
        push()
        buffer.enqueueMetadataUpdate(update)
    }
}
