import Dispatch
import Foundation
import NIOConcurrencyHelpers

/// Runs delayed work for the client: heartbeats, reconnect back-off, connect time-outs, unsubscribe delays.
///
/// The client never reads a clock itself; tests inject a `ManualScheduler` and move time by hand.
/// # Implementation requirements
/// An action runs at most once, never before its delay has passed on the scheduler's clock, and never after
/// ``ScheduledAction/cancel()`` returned. Actions may run on any thread: the client hops onto its own queue.
public protocol DDPScheduler: Sendable {
    /// The current time on this scheduler's clock.
    var now: Date { get }
    /// Runs `action` once after `delay`.
    func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any ScheduledAction
}

/// A pending action of a ``DDPScheduler``.
public protocol ScheduledAction: Sendable {
    /// Prevents the action from running, if it has not run yet. Idempotent.
    func cancel()
}

/// The real-time scheduler: `DispatchQueue.asyncAfter` on a queue of your choice.
public struct DispatchScheduler: DDPScheduler {
    private let queue: DispatchQueue

    /// Creates a scheduler that runs actions on `queue`.
    public init(queue: DispatchQueue = DispatchQueue(label: "MeteorDDP.scheduler")) {
        self.queue = queue
    }

    public var now: Date { Date() }

    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any ScheduledAction {
        let item = DispatchWorkItem(block: action)
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(max(0, delay.nanoseconds))), execute: item)
        return DispatchScheduledAction(item: item)
    }
}

private struct DispatchScheduledAction: ScheduledAction, @unchecked Sendable {
    // @unchecked because DispatchWorkItem is thread-safe (cancel may be called from any thread).
    let item: DispatchWorkItem
    func cancel() { item.cancel() }
}
