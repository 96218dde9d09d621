import Dispatch
import NIOConcurrencyHelpers

/// Where a ``DDPClient`` runs the app's code: method completions and `onResultReceived`, subscription waiters,
/// `onReconnect` hooks, status and account notifications, and a closed client's failed calls.
///
/// The one mechanism behind the threading rule: state changes on the client queue; what they mean for the app is
/// handed here, after the change is complete, and runs on a serial queue that is never the client queue, never an
/// event loop and holds no lock, in the order it was handed over. So the app's code may call any API, and a slow
/// callback delays only the callbacks after it. `.ci/run` checks that nothing else dispatches onto the queue.
///
/// Work handed over while earlier work is still waiting or running joins it: the queue is woken once for all of it.
/// A transport thread handling a burst of frames ``hold()``s the wake until the burst is handled, so a burst of
/// completed calls costs one thread wake-up, not one per call.
final class UserCodeQueue: Sendable {
    /// The serial queue (exposed for tests, which wait for it to be idle).
    let queue: DispatchQueue

    private struct State {
        /// Handed over and not yet taken by a drain, in order.
        var pending: [@Sendable () -> Void] = []
        /// Whether a drain is dispatched or running (it takes what is pending until nothing is).
        var draining = false
        /// Holds on waking the queue (``hold()``).
        var holds = 0
    }

    private let state = NIOLockedValueBox(State())

    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    /// Runs `work` after everything handed over before it.
    func run(_ work: @escaping @Sendable () -> Void) {
        let wake: Bool = state.withLockedValue { state in
            state.pending.append(work)
            guard !state.draining, state.holds == 0 else { return false }
            state.draining = true
            return true
        }
        if wake { queue.async { self.drain() } }
    }

    /// Until the matching ``release()``, work handed over waits (in order) instead of waking the queue; a drain
    /// already under way still takes it.
    func hold() {
        state.withLockedValue { $0.holds += 1 }
    }

    /// Ends a ``hold()``; the queue is woken for what waits, if nothing else holds it.
    func release() {
        let wake: Bool = state.withLockedValue { state in
            state.holds -= 1
            guard state.holds == 0, !state.pending.isEmpty, !state.draining else { return false }
            state.draining = true
            return true
        }
        if wake { queue.async { self.drain() } }
    }

    /// Runs what is pending, in order, until nothing is (work handed over meanwhile included).
    private func drain() {
        while true {
            let batch: [@Sendable () -> Void] = state.withLockedValue { state in
                guard !state.pending.isEmpty else {
                    state.draining = false
                    return []
                }
                defer { state.pending = [] }
                return state.pending
            }
            if batch.isEmpty { return }
            for work in batch { work() }
        }
    }
}

extension UserCodeQueue {
    /// What waits, for ``DDPClient/stateSummary()``.
    var summary: String {
        state.withLockedValue { "\($0.pending.count) pending, draining \($0.draining), holds \($0.holds)" }
    }
}
