import Foundation
import MeteorDDP
import NIOConcurrencyHelpers

/// A scheduler whose time moves only when a test calls ``advance(by:)``: heartbeats, back-off and
/// unsubscribe delays are tested without real waiting.
///
/// For example:
/// ```swift
/// let scheduler = ManualScheduler()
/// scheduler.advance(by: .milliseconds(17_500)) // runs every action due by then, in due order, on this thread
/// ```
public final class ManualScheduler: DDPScheduler, @unchecked Sendable {
    // @unchecked because all mutable state is in `state`, protected by its lock.

    // MARK: - Mutable State

    private struct Entry {
        let id: Int
        let due: Duration
        let action: @Sendable () -> Void
    }

    private struct State {
        /// Time elapsed since the start. Protected by `state`'s lock.
        var elapsed: Duration = .zero
        /// Pending actions. Protected by `state`'s lock.
        var entries: [Entry] = []
        /// Protected by `state`'s lock.
        var nextID = 0
    }

    private let state = NIOLockedValueBox(State())
    private let start: Date

    /// Creates a scheduler whose clock starts at `start`.
    public init(start: Date = Date(timeIntervalSince1970: 1_700_000_000)) {
        self.start = start
    }

    public var now: Date {
        let elapsed = state.withLockedValue { $0.elapsed }
        return start.addingTimeInterval(
            Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    /// The delays of the pending actions, measured from now, soonest first.
    public var pendingDelays: [Duration] {
        state.withLockedValue { state in state.entries.map { $0.due - state.elapsed }.sorted() }
    }

    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any ScheduledAction {
        let id: Int = state.withLockedValue { state in
            let id = state.nextID
            state.nextID += 1
            state.entries.append(Entry(id: id, due: state.elapsed + max(delay, .zero), action: action))
            return id
        }
        return ManualScheduledAction(id: id, scheduler: self)
    }

    /// Moves the clock forward, running every action that falls due, in due order, on the calling thread
    /// (never while holding the lock).
    public func advance(by duration: Duration) {
        let target = state.withLockedValue { $0.elapsed + duration }
        while true {
            let next: Entry? = state.withLockedValue { state in
                guard
                    let index = state.entries.indices.filter({ state.entries[$0].due <= target })
                        .min(by: {
                            (state.entries[$0].due, state.entries[$0].id) < (
                                state.entries[$1].due, state.entries[$1].id
                            )
                        })
                else { return nil }
                let entry = state.entries.remove(at: index)
                state.elapsed = max(state.elapsed, entry.due)
                return entry
            }
            guard let next else { break }
            next.action()
        }
        state.withLockedValue { $0.elapsed = target }
    }

    /// Runs every pending action whatever its delay (time jumps to the last one's due time).
    public func runAll() {
        let last = state.withLockedValue { state in state.entries.map(\.due).max() ?? state.elapsed }
        let now = state.withLockedValue { $0.elapsed }
        advance(by: last - now)
    }

    fileprivate func cancel(id: Int) {
        state.withLockedValue { $0.entries.removeAll { $0.id == id } }
    }
}

private struct ManualScheduledAction: ScheduledAction {
    let id: Int
    weak var scheduler: ManualScheduler?
    func cancel() { scheduler?.cancel(id: id) }
}
