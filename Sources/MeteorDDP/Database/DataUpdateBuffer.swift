import Dispatch
import Foundation
import NIOConcurrencyHelpers

/// Collects server updates from any thread and applies them to a ``Database`` in batches.
///
/// A `DispatchSource` of kind *user data add* on a serial queue coalesces the wake-ups: everything enqueued before a
/// flush runs lands in one transaction and one notification. Meteor's bounds apply: a batch waits until
/// `interval` passed without a new update (5 ms) but never longer than `maxAge` after its first update (500 ms). A
/// third bound is ours: a batch of `maxBatchSize` updates (16,384) is applied at once, so that on a flood the cache
/// applies one batch while the next is being decoded (both cores busy) rather than all of it after the last frame; a
/// burst of 100k updates gives seven notifications.
/// While held (quiescence) nothing is applied; on release everything lands in one transaction, and with
/// `resetting` the cache becomes exactly what arrived while held, reported as a diff (unchanged documents give no
/// change entry at all).
///
/// For example:
/// ```swift
/// let buffer = DataUpdateBuffer(database: database)
/// buffer.enqueue(.added(key, ["score": 25]))
/// buffer.performAfterFlush { print("visible now") }
/// ```
///
/// ## Concurrency
/// `enqueue`, `hold`, `release` and `performAfterFlush` may be called from any thread. Flushes and after-flush
/// callbacks run on the buffer's serial queue.
public final class DataUpdateBuffer: @unchecked Sendable {
    // @unchecked because `state` is protected by its lock and `source` is only resumed/cancelled in init/deinit.

    // MARK: - Mutable State

    private struct State {
        /// Updates not yet applied. Protected by `state`'s lock.
        var pending: [CacheUpdate] = []
        /// Callbacks to run after the batch containing everything enqueued before them. Protected by `state`'s lock.
        var afterFlush: [@Sendable () -> Void] = []
        /// Whether updates are held back (quiescence). Protected by `state`'s lock.
        var holding = false
        /// Whether the next flush first removes every document but the ones listed (a resetting hold was released).
        /// Protected by `state`'s lock.
        var resetOnNextFlush: Set<DocumentKey>?
        /// Whether the current hold resets the cache on release. Protected by `state`'s lock.
        var holdResets = false
        /// When the current batch's first and latest updates arrived. Protected by `state`'s lock.
        var firstEnqueue: Date?
        var lastEnqueue: Date?
        /// Whether the next flush must not wait for the debounce interval. Protected by `state`'s lock.
        var flushRequested = false
        /// Changes of the cache's metadata to make after the pending updates, in the same transaction. Protected by
        /// `state`'s lock.
        var metadataUpdates: [@Sendable (Database) -> Void] = []
        /// Whether a debounce timer is pending. Protected by `state`'s lock.
        var timerPending = false
        /// How many batches taken from `pending` are being applied right now (one on the buffer's queue, one on the
        /// client's: ``flushIfFree(thenInTheSameTransaction:)``). Protected by `state`'s lock.
        var applying = 0
        /// Whether the queue will look at `pending` again without being signalled (a source event or a debounce
        /// timer is on its way), so an enqueue need not signal. Protected by `state`'s lock.
        var wakeScheduled = false
    }

    private let state = NIOLockedValueBox(State())
    private let database: Database
    /// Where batches are applied and after-flush callbacks run (internal: tests stall it to choose interleavings).
    let queue: DispatchQueue
    private let source: any DispatchSourceUserDataAdd
    private let interval: TimeInterval
    private let maxAge: TimeInterval
    private let maxBatchSize: Int
    /// The default for `maxBatchSize` (and ``DDPClient/Configuration/bufferedWritesMaxBatchSize``): the last batch of a
    /// flood is applied after its last frame, so a smaller bound ends the flood sooner; 100k updates give seven
    /// batches.
    public static let defaultMaxBatchSize = 16_384
    /// The clock and timers of the debounce (tests pass a `ManualScheduler`-like scheduler: no real waiting).
    private let scheduler: any DDPScheduler
    private static let queueKey = DispatchSpecificKey<ObjectIdentifier>()
    /// How close to a debounce deadline counts as reaching it (see `flushIfDue`).
    static let deadlineSlack: TimeInterval = 0.000_002

    /// Creates a buffer for `database`.
    /// - Parameters:
    ///   - database: The cache the batches are applied to.
    ///   - interval: How long a batch waits for more updates (Meteor's `bufferedWritesInterval`, 5 ms); zero applies
    ///     every batch as soon as the queue gets to it.
    ///   - maxAge: The longest a batch waits after its first update (Meteor's `bufferedWritesMaxAge`, 500 ms).
    ///   - maxBatchSize: The number of updates at which a batch is applied without waiting (not while held).
    ///   - scheduler: The clock and timers of the debounce; `nil` uses real time.
    public init(
        database: Database, interval: Duration = .milliseconds(5), maxAge: Duration = .milliseconds(500),
        maxBatchSize: Int = DataUpdateBuffer.defaultMaxBatchSize,
        scheduler: (any DDPScheduler)? = nil
    ) {
        self.database = database
        let queue = DispatchQueue(label: "MeteorDDP.DataUpdateBuffer")
        self.queue = queue
        self.source = DispatchSource.makeUserDataAddSource(queue: queue)
        self.interval = interval.timeInterval
        self.maxAge = maxAge.timeInterval
        self.maxBatchSize = max(1, maxBatchSize)
        self.scheduler = scheduler ?? DispatchScheduler(queue: queue)
        queue.setSpecific(key: Self.queueKey, value: ObjectIdentifier(self))
        source.setEventHandler { [weak self] in self?.flushIfDue() }
        source.activate()
    }

    deinit {
        source.cancel()
    }

    // MARK: - Enqueuing

    /// Queues an update for the next batch.
    public func enqueue(_ update: DataUpdate) {
        enqueue(contentsOf: CollectionOfOne(update))
    }

    /// Queues updates for the next batch.
    public func enqueue<Updates: Collection<DataUpdate>>(contentsOf updates: Updates) {
        var packed = CacheUpdate.packing(updates)
        enqueue(taking: &packed)
    }

    /// Queues updates already in the cache's form for the next batch, leaving `updates` empty: taken whole when
    /// nothing is pending (no copy of the elements; `updates` then gets the buffer's empty array), else appended, and
    /// `updates` keeps its capacity for the caller's next burst (so on a flood, while updates wait, a burst of one
    /// frame allocates nothing).
    ///
    /// Without `signalling` the buffer's queue is not woken (the caller applies them at once with
    /// ``flushIfFree(thenInTheSameTransaction:)``, or a later enqueue or flush wakes it).
    func enqueue(taking updates: inout [CacheUpdate], signalling: Bool = true) {
        guard !updates.isEmpty else { return }
        let now = scheduler.now
        let signal: Bool = state.withLockedValue { state in
            if state.pending.isEmpty {
                swap(&state.pending, &updates)
            } else {
                state.pending.appendMoving(from: &updates, vacating: .vacated)
            }
            if state.firstEnqueue == nil { state.firstEnqueue = now }
            state.lastEnqueue = now
            guard signalling else { return false }
            defer { state.wakeScheduled = true }
            // A full batch goes now, whatever the debounce is waiting for (a timer already armed finds it gone).
            if state.pending.count >= maxBatchSize, !state.holding, !state.flushRequested {
                state.flushRequested = true
                return true
            }
            return !state.wakeScheduled
        }
        // A flood of small enqueues signals once: the rest find the queue already due to look.
        if signal { source.add(data: 1) }
        updates.removeAll(keepingCapacity: true)
    }

    /// Changes the cache's metadata (``CacheMetadata``) in the transaction that applies the updates enqueued before,
    /// after them (the next flush; the queue is not woken for it).
    func enqueueMetadataUpdate(_ update: @escaping @Sendable (Database) -> Void) {
        state.withLockedValue { $0.metadataUpdates.append(update) }
    }

    /// Runs `block` (on the buffer's queue) once everything enqueued before it has been applied; while held, after
    /// the release. It also makes the pending batch flush without waiting for the debounce interval.
    public func performAfterFlush(_ block: @escaping @Sendable () -> Void) {
        state.withLockedValue { state in
            state.afterFlush.append(block)
            state.flushRequested = true
        }
        source.add(data: 1)
    }

    /// Whether everything enqueued so far is applied: nothing pending, nothing being applied, not held, and no
    /// after-flush callback waiting. When `true`, whatever was enqueued before is visible in the database now.
    public var isIdle: Bool {
        state.withLockedValue { $0.pending.isEmpty && $0.applying == 0 && !$0.holding && $0.afterFlush.isEmpty }
    }

    /// Applies everything pending now (nothing while held), then runs the due callbacks. Synchronous.
    public func flush() {
        if DispatchQueue.getSpecific(key: Self.queueKey) == ObjectIdentifier(self) {
            flushNow()
        } else {
            queue.sync { flushNow() }
        }
    }

    // MARK: - Quiescence

    /// Holds updates back until ``release(keeping:)``. With `resetting`, the release replaces the cache's contents.
    /// A resetting hold drops updates still pending from before it: the release replaces everything anyway.
    public func hold(resetting: Bool) {
        state.withLockedValue { state in
            state.holding = true
            if resetting {
                state.holdResets = true
                state.pending.removeAll()
            }
        }
    }

    /// Applies everything held in one transaction. If the hold was resetting, every document is removed first except
    /// those in `keeping` (documents whose server version is still kept aside, for example).
    public func release(keeping: Set<DocumentKey> = []) {
        release(keeping: keeping, signalling: true)
    }

    /// ``release(keeping:)``; without `signalling`, the buffer's queue is not woken: the caller applies the release
    /// itself, with ``flushIfFree(thenInTheSameTransaction:)`` (until that succeeds, a later enqueue or flush wakes
    /// the queue as usual).
    func release(keeping: Set<DocumentKey>, signalling: Bool) {
        state.withLockedValue { state in
            state.flushRequested = true
            state.holding = false
            if state.holdResets { state.resetOnNextFlush = keeping }
            state.holdResets = false
        }
        if signalling { source.add(data: 1) }
    }

    /// Whether updates are being held back.
    public var isHolding: Bool { state.withLockedValue { $0.holding } }

    // MARK: - Flushing

    private func flushIfDue() {
        let now = scheduler.now
        let decision: (flush: Bool, rearmAt: Date?) = state.withLockedValue { state in
            defer { state.wakeScheduled = state.timerPending }
            guard !state.holding else { return (false, nil) }
            if state.flushRequested || state.pending.isEmpty { return (true, nil) }
            guard let first = state.firstEnqueue, let last = state.lastEnqueue else { return (true, nil) }
            // A deadline within two microseconds counts as reached, and timers are armed to the whole microsecond below
            // their deadline: `Date` arithmetic at today's epoch is only good to ~0.1 µs, so a delay computed from two
            // dates may land a little after the deadline (on a manual clock, past the end of the advance meant to
            // fire it) or a little before it (and the timer would re-arm itself for nothing).
            let reached = now.addingTimeInterval(Self.deadlineSlack)
            if reached >= last.addingTimeInterval(interval) || reached >= first.addingTimeInterval(maxAge) {
                return (true, nil)
            }
            guard !state.timerPending else { return (false, nil) }
            state.timerPending = true
            return (false, min(last.addingTimeInterval(interval), first.addingTimeInterval(maxAge)))
        }
        if decision.flush {
            flushNow()
        } else if let deadline = decision.rearmAt {
            let delay = max(deadline.timeIntervalSince(now), 0)
            _ = scheduler.schedule(after: .microseconds(Int64((delay * 1e6).rounded(.down)))) { [weak self] in
                guard let self else { return }
                self.queue.async {
                    self.state.withLockedValue { $0.timerPending = false }
                    self.flushIfDue()
                }
            }
        }
    }

    /// Applies everything pending now (nothing while held) and then `body`, in one transaction on the calling
    /// thread, then runs the due callbacks there; returns `true`. Never waits: when another thread holds the cache's
    /// write lock (an app's transaction, which may itself be waiting for the caller's queue) or a batch the buffer's
    /// queue took is still to be applied (it waits for that lock), nothing is applied, `body` does not run, and it
    /// returns `false` for the caller to try again later. Call it from one thread at a time (the client queue).
    func flushIfFree(thenInTheSameTransaction body: () -> Void) -> Bool {
        var taken: Batch?
        let done = database.performUpdatesIfUnlocked { () -> Bool in
            // Under the write lock: a batch the queue took and has not applied is waiting for it, and must go first.
            var batch = Batch()
            let free: Bool = state.withLockedValue { state in
                guard state.applying == 0 else { return false }
                batch = takeBatch(&state)
                return true
            }
            guard free else { return false }
            batch.apply(to: database)
            body()
            taken = batch
            return true
        }
        if let taken { finish(taken) }
        return done ?? false
    }

    /// Runs `block` on the buffer's queue once it has done what it was doing (a batch it took is applied, which may
    /// wait for a transaction of another thread). Nobody waits for it: `block` hands work back to its caller's queue.
    func afterCurrentWork(_ block: @escaping @Sendable () -> Void) {
        queue.async(execute: block)
    }

    private func flushNow() {
        var batch = takeBatch()
        guard batch.taken else { return }
        if batch.reset != nil || !batch.updates.isEmpty || !batch.metadataUpdates.isEmpty {
            database.performUpdates { batch.apply(to: database) }
        }
        finish(batch)
    }

    /// What one flush applies.
    private struct Batch {
        var taken = false
        var updates: [CacheUpdate] = []
        var callbacks: [@Sendable () -> Void] = []
        var reset: Set<DocumentKey>?
        var metadataUpdates: [@Sendable (Database) -> Void] = []

        /// Inside a transaction.
        mutating func apply(to database: Database) {
            if let keeping = reset { database.removeAllDocuments(except: keeping) }
            database.apply(takingCacheUpdates: &updates)
            for update in metadataUpdates { update(database) }
        }
    }

    /// Takes the pending batch (nothing while held).
    private func takeBatch() -> Batch {
        state.withLockedValue { takeBatch(&$0) }
    }

    private func takeBatch(_ state: inout State) -> Batch {
        // The batch is swapped out of the state (not copied), so the database takes its updates apart in place.
        var batch = Batch()
        guard !state.holding else { return batch }
        swap(&batch.updates, &state.pending)
        swap(&batch.callbacks, &state.afterFlush)
        swap(&batch.reset, &state.resetOnNextFlush)
        swap(&batch.metadataUpdates, &state.metadataUpdates)
        state.firstEnqueue = nil
        state.lastEnqueue = nil
        state.flushRequested = false
        state.applying += 1
        batch.taken = true
        return batch
    }

    private func finish(_ batch: Batch) {
        guard batch.taken else { return }
        state.withLockedValue { $0.applying -= 1 }
        for callback in batch.callbacks { callback() }
    }
}
