import EJSON

/// What the session needs from the local cache: buffered server updates with after-flush callbacks, quiescence
/// (hold / release, optionally resetting), and stub runs that report the documents they wrote.
///
/// ``DatabaseLocalStore`` implements it over ``Database`` and ``DataUpdateBuffer``.
protocol LocalStore: Sendable {
    /// Queues a server update; it reaches the cache in the next batch.
    func enqueue(_ update: consuming CacheUpdate)
    /// Hands queued updates on (called after each burst of incoming frames).
    func push()
    /// Applies everything queued now (nothing while held).
    func flush()
    /// Applies everything queued now (nothing while held) and then `body`, in one transaction on the calling thread;
    /// returns `false` without doing anything when that cannot be done without waiting for another thread (see
    /// ``DataUpdateBuffer/flushIfFree(thenInTheSameTransaction:)``).
    func flushIfFree(thenInTheSameTransaction body: () -> Void) -> Bool
    /// ``release(keeping:)`` for the caller to apply with ``flushIfFree(thenInTheSameTransaction:)``.
    func releaseForInlineFlush(keeping: Set<DocumentKey>)
    /// Runs `block` after everything queued before it has been applied (after the release, while held).
    func performAfterFlush(_ block: @escaping @Sendable () -> Void)
    /// Whether everything queued so far has been applied (so an after-flush block could run now).
    var isIdle: Bool { get }
    /// Holds updates back until ``release(keeping:)``; with `resetting`, updates not applied yet are dropped and the
    /// release makes the cache exactly what arrived while held (reported as a diff).
    func hold(resetting: Bool)
    /// Applies everything held in one transaction; a resetting hold keeps the documents in `keeping` as they are.
    func release(keeping: Set<DocumentKey>)
    /// Runs a stub inside one write transaction and returns its outcome and the documents it wrote with their
    /// versions from before (also when it threw after writing some); they hold pending writes from that transaction
    /// on. With `recordingReads`, what it read from the cache too.
    func runStub<T>(recordingReads: Bool, _ body: () throws -> T) -> Database.RecordedRun<T>
    /// Puts documents back to the versions given (undoing a stub whose call is not made), in one transaction, in
    /// which the documents in `settled` stop holding pending writes.
    func revert(_ originals: [(DocumentKey, EJSONObject?)], settled: [DocumentKey])
    /// The documents stop holding pending writes (their server versions are queued): in the transaction that applies
    /// what is queued now.
    func settle(_ keys: [DocumentKey])
    /// Changes the cache's metadata in the transaction that applies what is queued now.
    func updateMetadataWithNextFlush(_ update: @escaping @Sendable (Database) -> Void)
}
