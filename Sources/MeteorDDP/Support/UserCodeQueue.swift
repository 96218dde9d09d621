import Dispatch

/// Where a ``DDPClient`` runs the app's code: method completions and `onResultReceived`, subscription waiters,
/// `onReconnect` hooks, status and account notifications, and a closed client's failed calls.
///
/// The one mechanism behind the threading rule: state changes on the client queue; what they mean for the app is
/// handed here, after the change is complete, and runs on a serial queue that is never the client queue, never an
/// event loop and holds no lock, in the order it was handed over. So the app's code may call any API, and a slow
/// callback delays only the callbacks after it. `.ci/run` checks that nothing else dispatches onto the queue.
struct UserCodeQueue: Sendable {
    /// The serial queue (exposed for tests, which wait for it to be idle).
    let queue: DispatchQueue

    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    /// Runs `work` after everything handed over before it.
    func run(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }
}
