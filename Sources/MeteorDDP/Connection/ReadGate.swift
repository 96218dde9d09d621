import Atomics
import NIOConcurrencyHelpers

/// Backpressure without blocking a thread: the client closes the gate when the frames it has not handled yet reach
/// their bound, and a transport whose reader is a task waits at the gate (suspended, its event loop free to serve
/// other sockets; NIO stops reading the socket meanwhile) until the client queue has caught up and opens it.
///
/// The reader checks it after each event it delivers: one relaxed atomic load while the gate is open.
final class ReadGate: Sendable {
    private let closed = ManagedAtomic(false)
    /// The reader waiting at the gate, if it is.
    private let waiter = NIOLockedValueBox<CheckedContinuation<Void, Never>?>(nil)

    /// Whether the reader must wait before it reads on.
    var isClosed: Bool { closed.load(ordering: .relaxed) }

    /// The reader waits at the gate from its next check.
    func close() {
        closed.store(true, ordering: .sequentiallyConsistent)
    }

    /// The reader goes on (resumed if it waits).
    func open() {
        closed.store(false, ordering: .sequentiallyConsistent)
        waiter.withLockedValue { $0.take() }?.resume()
    }

    /// Returns once the gate is open; at once if it is, or if the reading task is cancelled (its connection is closing:
    /// nothing it reads matters any more).
    func waitWhileClosed() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waits = waiter.withLockedValue { waiter in
                    guard closed.load(ordering: .sequentiallyConsistent) else { return false }
                    waiter = continuation
                    return true
                }
                if !waits { continuation.resume() }
            }
        } onCancel: {
            open()
        }
    }
}

/// A transport whose reader can wait at a ``ReadGate`` instead of blocking its thread (``WebSocketTransport``): the
/// client's side door for backpressure, internal as the gate.
protocol GatedReadTransport: Transport {
    /// Starts a connection attempt whose reader waits at `readGate` while it is closed (none: it never waits).
    func connect(readGate: ReadGate?, onEvent: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection
}
