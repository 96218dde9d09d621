import NIOConcurrencyHelpers

extension Database {
    /// Every change set from now on, in commit order: each commit a read made before the consumer starts would not
    /// see (one committed before, whose delivery is still on its way, is not delivered).
    ///
    /// Each iteration is an independent consumer that receives every ``DatabaseChanges``. A consumer that falls behind
    /// does not make memory grow: the change sets it has not taken yet are **merged** into one (losslessly, see
    /// ``DatabaseChanges/merge(_:)``), so it may receive fewer, larger change sets. Cancelling the iterating task ends
    /// the iteration.
    ///
    /// For example:
    /// ```swift
    /// for await changes in database.changes { render(changes.affectedDocumentKeys) }
    /// ```
    public var changes: DatabaseChangesSequence { DatabaseChangesSequence(database: self) }

    /// Calls `handler` on the main actor with the changes of every transaction (merged when the main actor is busy).
    /// Keep the returned token; observation stops when it is cancelled or released.
    /// Commits made after it returns are all delivered: the consumer is registered before it returns.
    @MainActor
    public func observeChangesOnMainActor(_ handler: @escaping @MainActor (DatabaseChanges) -> Void) -> ObservationToken
    {
        let iterator = changes.makeAsyncIterator()
        let task = Task { @MainActor in
            var iterator = iterator
            while let changes = await iterator.next() { handler(changes) }
        }
        return ObservationToken { task.cancel() }
    }
}

/// Cancels an observation when cancelled, and when deinitialised unless it was made not to (see
/// ``LiveQuery/onChange(on:_:)``). Idempotent.
public final class ObservationToken: Sendable {
    private let cancellation: NIOLockedValueBox<(@Sendable () -> Void)?>
    private let cancelsOnDeinit: Bool

    init(cancelsOnDeinit: Bool = true, _ cancel: @escaping @Sendable () -> Void) {
        cancellation = NIOLockedValueBox(cancel)
        self.cancelsOnDeinit = cancelsOnDeinit
    }

    /// Stops the observation.
    public func cancel() {
        let cancel = cancellation.withLockedValue { value in
            defer { value = nil }
            return value
        }
        cancel?()
    }

    deinit {
        if cancelsOnDeinit { cancel() }
    }
}

/// The change sets of a ``Database`` as an `AsyncSequence` (see ``Database/changes``).
public struct DatabaseChangesSequence: AsyncSequence, Sendable {
    public typealias Element = DatabaseChanges
    let database: Database

    /// Registers a consumer at once: it receives every commit made from now on.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(registration: DatabaseChangesRegistration(database: database))
    }

    /// Iterates the change sets; ends when the task is cancelled. An iterator that is dropped (a `for await` left
    /// with `break`) unregisters its consumer, so it costs nothing on later commits.
    public struct AsyncIterator: AsyncIteratorProtocol, Sendable {
        let registration: DatabaseChangesRegistration

        public mutating func next() async -> DatabaseChanges? {
            let subscriber = registration.subscriber
            let next = await withTaskCancellationHandler {
                await subscriber.next()
            } onCancel: {
                subscriber.finish()
            }
            if next == nil { registration.unregister() }
            return next
        }
    }
}

/// Keeps one consumer registered with the database for as long as its iterator exists.
final class DatabaseChangesRegistration: Sendable {
    let subscriber: DatabaseChangesSubscriber
    private let database: Database

    init(database: Database) {
        self.database = database
        subscriber = DatabaseChangesSubscriber(after: database.changeSetsVisible)
        let subscriber = self.subscriber
        database.subscribers.withLockedValue { $0[ObjectIdentifier(subscriber)] = subscriber }
    }

    func unregister() {
        let subscriber = self.subscriber
        _ = database.subscribers.withLockedValue { $0.removeValue(forKey: ObjectIdentifier(subscriber)) }
    }

    deinit {
        unregister()
        subscriber.finish()
    }
}

/// One consumer of ``Database/changes``: at most one pending (merged) change set and at most one waiting task.
final class DatabaseChangesSubscriber: Sendable {
    /// The number of the last change set committed when the consumer was made: it receives those after it only
    /// (an earlier one's delivery may still be on its way).
    private let after: UInt64
    private struct State {
        /// Protected by `state`'s lock.
        var pending: DatabaseChanges?
        /// Protected by `state`'s lock.
        var waiter: CheckedContinuation<DatabaseChanges?, Never>?
        /// Protected by `state`'s lock.
        var finished = false
    }

    private let state = NIOLockedValueBox(State())

    init(after: UInt64) {
        self.after = after
    }

    /// Delivers change set number `sequence`: to the waiting task, or merged into the pending one (nothing for a
    /// change set committed before the consumer was made).
    func receive(_ changes: DatabaseChanges, sequence: UInt64) {
        guard sequence > after else { return }
        let waiter: CheckedContinuation<DatabaseChanges?, Never>? = state.withLockedValue { state in
            guard !state.finished else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            if state.pending == nil { state.pending = changes } else { state.pending!.merge(changes) }
            return nil
        }
        waiter?.resume(returning: changes)
    }

    func next() async -> DatabaseChanges? {
        await withCheckedContinuation { continuation in
            let immediate: DatabaseChanges?? = state.withLockedValue { state in
                if let pending = state.pending {
                    state.pending = nil
                    return .some(pending)
                }
                if state.finished { return .some(nil) }
                state.waiter = continuation
                return .none
            }
            if let immediate { continuation.resume(returning: immediate) }
        }
    }

    func finish() {
        let waiter: CheckedContinuation<DatabaseChanges?, Never>? = state.withLockedValue { state in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }
}
