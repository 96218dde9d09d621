/// A subscription's status as an `Observable` model (``ObservedValue/value`` is the ``SubscriptionStatus``).
@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *)
public typealias ObservedSubscription = ObservedValue<SubscriptionStatus>
/// The connection status as an `Observable` model.
@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *)
public typealias ObservedConnection = ObservedValue<ConnectionStatus>

@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *)
extension ObservedValue where Value == SubscriptionStatus {
    /// Whether the subscription is ready.
    public var isReady: Bool { value == .ready }
}

extension Subscription {
    /// The subscription's status as an `Observable` model, changed on `scheduler` (the main actor by default).
    @available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *)
    public func observed(scheduler: ObservationScheduler = .mainActor) -> ObservedSubscription {
        ObservedValue(initial: status, updates: statusUpdates, scheduler: scheduler)
    }
}

extension DDPClient {
    /// The connection status as an `Observable` model, changed on `scheduler` (the main actor by default).
    @available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *)
    public func observedStatus(scheduler: ObservationScheduler = .mainActor) -> ObservedConnection {
        ObservedValue(initial: status, updates: statusUpdates, scheduler: scheduler)
    }
}
