import NIOConcurrencyHelpers
import Observation

/// A value followed from an `AsyncSequence` into an `Observable` model on a scheduler.
@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *)
public final class ObservedValue<Value: Sendable>: Observable, @unchecked Sendable {
    // @unchecked because the mutable state is in `state`, protected by its lock.

    private let registrar = ObservationRegistrar()
    private let state: NIOLockedValueBox<Value>
    private let task = NIOLockedValueBox<Task<Void, Never>?>(nil)
    /// What the model keeps alive for as long as it lives (an ``ObservedSubscription``'s ``Subscription`` handle).
    let owned: (any Sendable)?

    init<S: AsyncSequence & Sendable>(
        initial: Value, updates: S, scheduler: ObservationScheduler, owning owned: (any Sendable)? = nil
    )
    where S.Element == Value {
        self.owned = owned
        state = NIOLockedValueBox(initial)
        let started = Task { [weak self] in
            do {
                for try await value in updates {
                    guard let self else { return }
                    scheduler.schedule { [weak self] in self?.set(value) }
                }
            } catch {}
        }
        task.withLockedValue { $0 = started }
    }

    deinit {
        task.withLockedValue { $0 }?.cancel()
    }

    /// The current value.
    public var value: Value {
        registrar.access(self, keyPath: \.value)
        return state.withLockedValue { $0 }
    }

    private func set(_ value: Value) {
        registrar.withMutation(of: self, keyPath: \.value) { state.withLockedValue { $0 = value } }
    }

    /// Stops following the sequence; the model keeps its last value.
    public func stop() {
        task.withLockedValue { $0 }?.cancel()
    }
}
