import Dispatch

/// Where observable models (``ObservedQuery``, ``ObservedSubscription``, ``ObservedConnection``, ``ObservedUser``)
/// change, like GRDB's `ValueObservation` schedulers: on the main actor (the default, what SwiftUI needs), or on a
/// serial queue of the app's. Observers registered with `withObservationTracking` are told on that same thread.
public enum ObservationScheduler: Sendable {
    /// The main actor (the main dispatch queue), in order.
    case mainActor
    /// A serial dispatch queue of the app's, in order.
    case queue(DispatchQueue)

    var dispatchQueue: DispatchQueue {
        switch self {
        case .mainActor: return .main
        case .queue(let queue): return queue
        }
    }

    func schedule(_ work: @escaping @Sendable () -> Void) {
        dispatchQueue.async(execute: work)
    }
}
