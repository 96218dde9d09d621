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

    /// The handle the model keeps (``Subscription/observed(scheduler:)``): call its ``Subscription/stop()`` to let go
    /// of the subscription before the model goes.
    public var subscription: Subscription? { owned as? Subscription }
}

extension Subscription {
    /// The subscription's status as an `Observable` model, changed on `scheduler` (the main actor by default).
    ///
    /// The model keeps this handle for its whole life, so a view that keeps only the model (in `@State`) keeps the
    /// subscription and its documents: `client.subscribe(…).observed()` is the whole pattern. The handle is released
    /// (the subscription ends after its `notInUseTimeout`, if no other handle uses it) when the model is.
    @available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *)
    public func observed(scheduler: ObservationScheduler = .mainActor) -> ObservedSubscription {
        ObservedValue(initial: status, updates: statusUpdates, scheduler: scheduler, owning: self)
    }
}

extension DDPClient {
    /// The connection status as an `Observable` model, changed on `scheduler` (the main actor by default).
    @available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *)
    public func observedStatus(scheduler: ObservationScheduler = .mainActor) -> ObservedConnection {
        ObservedValue(initial: status, updates: statusUpdates, scheduler: scheduler)
    }
}
