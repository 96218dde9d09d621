import NIOConcurrencyHelpers

/// The frames a connection has yet to write, handed from the client queue to the connection's writer task, in order.
///
/// The writer takes everything queued at once (``next()``), so a burst of calls costs one hand-over, not one per frame.
/// Not an `AsyncStream<String>`: its storage is generic code in the concurrency library, which looks up its type
/// metadata on every element (a profile of 1,000 pipelined calls put ~6 % of the event loop's time there).
/// Bounded by the connection, which counts the bytes queued
/// (``WebSocketTransport/Configuration/maxBufferedOutboundBytes``).
final class OutboundFrames: Sendable {
    private struct State {
        var frames: [String] = []
        /// The writer, suspended in ``next()`` while nothing is queued.
        var waiter: UnsafeContinuation<[String]?, Never>?
        var finished = false
        /// Ending once the frames queued are taken (``finishAfterQueued()``): nothing more is queued.
        var closing = false
    }

    private let state = NIOLockedValueBox(State())

    /// Queues `frame` behind the others; dropped once finished.
    func append(_ frame: String) {
        let handOver: (UnsafeContinuation<[String]?, Never>, [String])? = state.withLockedValue { state in
            guard !state.finished, !state.closing else { return nil }
            guard let waiter = state.waiter else {
                state.frames.append(frame)
                return nil
            }
            state.waiter = nil
            return (waiter, [frame])
        }
        if let (waiter, frames) = handOver { waiter.resume(returning: frames) }
    }

    /// Ends the queue: the writer's ``next()`` returns `nil` (frames still queued are dropped: the connection is
    /// going).
    func finish() {
        let waiter: UnsafeContinuation<[String]?, Never>? = state.withLockedValue { state in
            state.finished = true
            state.frames = []
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// Ends the queue once the writer has taken the frames queued so far (then ``next()`` returns `nil`); later frames
    /// are dropped.
    func finishAfterQueued() {
        let waiter: UnsafeContinuation<[String]?, Never>? = state.withLockedValue { state in
            state.closing = true
            // A waiting writer has nothing queued: it ends now.
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// Every frame queued so far, in order, waiting for one if there is none; `nil` once finished or when the
    /// calling task is cancelled (which finishes the queue). One writer at a time.
    func next() async -> [String]? {
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<[String]?, Never>) in
                let ready: [String]?? = state.withLockedValue { state in
                    if state.finished { return .some(nil) }
                    guard state.frames.isEmpty else {
                        defer { state.frames = [] }
                        return .some(state.frames)
                    }
                    if state.closing {
                        state.finished = true
                        return .some(nil)
                    }
                    precondition(state.waiter == nil, "OutboundFrames has one writer")
                    state.waiter = continuation
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            finish()
        }
    }
}
