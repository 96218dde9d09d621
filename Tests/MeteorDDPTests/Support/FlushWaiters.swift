@testable import MeteorDDP

/// Flush waiters with closures, for tests of ``ServerDocumentBuffer``: the buffer hands out tokens, this keeps each
/// token's callbacks and runs them when the buffer says the token is done.
final class FlushWaiters {
    private var callbacks: [Int: [() -> Void]] = [:]

    /// Registers `callback` as a waiter of `buffer`; returns whether it waits (`false`: nothing to wait for).
    func register(
        _ buffer: inout ServerDocumentBuffer, sent: Set<String>, generation: Int, _ callback: @escaping () -> Void
    ) -> Bool {
        guard let token = buffer.runWhenAllFlushed(sentMethods: sent, sentGeneration: generation) else { return false }
        callbacks[token, default: []].append(callback)
        return true
    }

    /// `updated` for `methodID` (every call sent): runs the callbacks of the waiters it completes, in order.
    func methodUpdated(_ buffer: inout ServerDocumentBuffer, _ methodID: String) {
        for token in buffer.methodUpdated(methodID, isSent: { _ in true }).flushedWaiters {
            for callback in callbacks.removeValue(forKey: token) ?? [] { callback() }
        }
    }
}
