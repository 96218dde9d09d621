import EJSON
import NIOConcurrencyHelpers

/// The awaiting task's side of a call made with ``DDPClient/call(_:params:options:)``: the call's outcome, and the
/// transport's request that the task hand the frames it waits on to the client queue.
///
/// When a frame the task waits on arrives (its `result` or `updated`), the transport's thread (an event loop) does not
/// wake a client-queue thread that then wakes the task: it wakes the task, which drains the inbox on the client queue
/// from its own thread (`queue.sync`), with every frame that arrived meanwhile. So the frame reaches its caller with
/// one thread wake-up, as it reaches a bare WebSocket client's reader, and none of the client's work runs on the
/// transport's thread.
///
/// A task that finished (its call completed, or it was cancelled) accepts no more requests: the transport's thread
/// then hands the frames over to the client queue itself, and a request accepted but not yet served when the task
/// finishes is handed over by the task.
final class CallWaiter: Sendable {
    /// What wakes the task.
    enum Wake: Sendable {
        /// Frames wait in the inbox for this task to drain them.
        case drain
        case completed(Result<EJSONValue?, any Error>)
        case cancelled
    }

    private struct State {
        var continuation: UnsafeContinuation<Void, Never>?
        var outcome: Result<EJSONValue?, any Error>?
        var drainRequested = false
        var cancelled = false
        var finished = false

        /// What the task is to do next, if anything; a drain first (the outcome may depend on it).
        mutating func take() -> Wake? {
            if drainRequested {
                drainRequested = false
                return .drain
            }
            if cancelled { return .cancelled }
            return outcome.map { .completed($0) }
        }

        var hasWake: Bool { drainRequested || cancelled || outcome != nil }
    }

    private let state = NIOLockedValueBox(State())

    /// Waits for the next thing the task is to do.
    func next() async -> Wake {
        while true {
            if let wake = state.withLockedValue({ $0.take() }) { return wake }
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                let now = state.withLockedValue { state in
                    if state.hasWake { return true }
                    state.continuation = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        }
    }

    /// Asks the task to drain the inbox. Returns `false` when it finished and will not: the caller hands over itself.
    /// Called on the transport's thread.
    func requestDrain() -> Bool {
        let (accepted, continuation) = state.withLockedValue { state in
            guard !state.finished else { return (false, UnsafeContinuation<Void, Never>?.none) }
            state.drainRequested = true
            defer { state.continuation = nil }
            return (true, state.continuation)
        }
        continuation?.resume()
        return accepted
    }

    /// The call completed. Called on the client queue.
    func complete(_ outcome: Result<EJSONValue?, any Error>) {
        wake { $0.outcome = outcome }
    }

    /// The task was cancelled. Called on any thread.
    func cancel() {
        wake { $0.cancelled = true }
    }

    /// The task stops waiting. Returns whether a drain it accepted was not served: the task hands it over.
    func finish() -> Bool {
        state.withLockedValue { state in
            state.finished = true
            defer { state.drainRequested = false }
            return state.drainRequested
        }
    }

    private func wake(_ change: (inout State) -> Void) {
        let continuation = state.withLockedValue { state in
            change(&state)
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume()
    }
}
