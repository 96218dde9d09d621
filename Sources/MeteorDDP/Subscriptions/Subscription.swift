import Dispatch
import EJSON
import NIOConcurrencyHelpers

/// A handle on a subscription: shared with every other handle for the same name and EJSON-equal parameters.
///
/// For example:
/// ```swift
/// let todos = client.subscribe("todos", params: ["listA"])
/// try await todos.ready()
/// // …
/// todos.stop()   // the server is told after `notInUseTimeout` if no other handle uses it by then
/// ```
///
/// ## Concurrency
/// A handle may be used from any thread. ``stop()`` is idempotent and also happens when the handle is deinitialised.
/// Completion handlers run on the client's callback queue (at once on the calling thread when already settled), never
/// on the client queue: they may subscribe, call or stop again.
///
/// ## Inside a transaction
/// A handle made inside the app's own `database.performUpdates { … }` is *bound* when that transaction commits (the
/// client queue may be waiting for the transaction's write lock, so the subscription is made right after it, on the
/// same thread, in the order of the calls made inside it). Until then its ``status`` is pending and its ``id`` is the
/// id it will have if no other handle shares the subscription; waiting (``ready()``, ``whenReady(_:)``,
/// ``statusUpdates``) and ``stop()`` work at once and take effect when it is bound.
public final class Subscription: Sendable {
    /// The publication's name.
    public let name: String
    /// The publication's parameters.
    public let params: [EJSONValue]
    /// The subscription id on the wire (shared by every handle of the same server subscription). A handle made
    /// inside a transaction may change it once when it is bound (it joined an existing subscription).
    public var id: String { binding.withLockedValue { $0.id } }

    let shared: SubscriptionState
    private weak let client: DDPClient?
    private let binding: NIOLockedValueBox<Binding>

    /// Whether the client knows of this handle yet, and whether it was stopped. Protected by `binding`'s lock.
    private struct Binding {
        var id: String
        var isBound: Bool
        var stopped = false
    }

    init(name: String, params: [EJSONValue], id: String, shared: SubscriptionState, client: DDPClient) {
        self.name = name
        self.params = params
        self.shared = shared
        self.client = client
        self.binding = NIOLockedValueBox(Binding(id: id, isBound: true))
    }

    /// A handle the client makes its subscription for later (``DDPClient/subscribe(_:params:notInUseTimeout:)``
    /// inside a transaction): `provisionalID` is its id if it makes a new subscription.
    init(
        unboundName name: String, params: [EJSONValue], provisionalID: String, userCode: UserCodeQueue,
        client: DDPClient
    ) {
        self.name = name
        self.params = params
        self.shared = SubscriptionState(name: name, userCode: userCode)
        self.client = client
        self.binding = NIOLockedValueBox(Binding(id: provisionalID, isBound: false))
    }

    deinit {
        stop()
    }

    /// Binds an unbound handle to the subscription the client made or joined for it (`id`). Returns `false`, binding
    /// nothing, when the handle was stopped before: the caller then releases the subscription again.
    func bind(to id: String) -> Bool {
        binding.withLockedValue { binding in
            precondition(!binding.isBound, "a subscription handle is bound once")
            binding.id = id
            binding.isBound = true
            return !binding.stopped
        }
    }

    /// Whether the handle was stopped (an unbound one is then never subscribed).
    var isStopped: Bool { binding.withLockedValue { $0.stopped } }

    // MARK: - Observing

    /// The current status.
    public var status: SubscriptionStatus { shared.status }

    /// Whether the subscription is ready.
    public var isReady: Bool { status == .ready }

    /// The status now and every change after it (pending → ready, or failed / stopped, which end the sequence).
    public var statusUpdates: SubscriptionStatusUpdates { SubscriptionStatusUpdates(stream: shared.statusUpdates) }

    /// Returns once the subscription is ready.
    ///
    /// - Throws: the server's ``MeteorError`` when it ends the subscription with an error (`nosub`), as any server
    ///   refusal is thrown; ``SubscriptionError`` when its `ready` or `nosub` did not parse;
    ///   ``SubscriptionStoppedError`` when it is stopped first (or the client is closed), `CancellationError` at once
    ///   when the task is cancelled.
    public func ready() async throws {
        // A cancelled wait lets go of its waiter at once: a subscription that never becomes ready does not collect
        // one per cancelled `ready()`.
        let shared = self.shared
        try await withCancellableContinuation { resume in
            guard let token = shared.whenSettled({ resume($0) }) else { return nil }
            return { shared.removeWaiter(token) }
        }
    }

    /// Returns once the subscription is ready, or throws ``SubscriptionTimeoutError`` if it is not within `timeout`
    /// (measured on the client's scheduler). The subscription goes on either way: ``stop()`` gives it up.
    ///
    /// - Throws: what ``ready()`` throws, or ``SubscriptionTimeoutError``.
    public func ready(timeout: Duration) async throws {
        let shared = self.shared
        guard let scheduler = client?.scheduler else { return try await ready() }
        let name = self.name
        // The timer and the waiter's token, and whether the timer fired: whichever of the expiry and the registration
        // comes second lets go of the waiter.
        let wait = NIOLockedValueBox<(timer: (any ScheduledAction)?, token: Int?, expired: Bool)>((nil, nil, false))
        let start: (@escaping @Sendable (Result<Void, any Error>) -> Void) -> (@Sendable () -> Void)? = { resume in
            let expiry = scheduler.schedule(after: timeout) {
                let token: Int? = wait.withLockedValue {
                    $0.expired = true
                    return $0.token
                }
                if let token { shared.removeWaiter(token) }
                resume(.failure(SubscriptionTimeoutError(name: name, timeout: timeout)))
            }
            wait.withLockedValue { $0.timer = expiry }
            guard
                let token = shared.whenSettled({ result in
                    wait.withLockedValue { $0.timer }?.cancel()
                    resume(result)
                })
            else { return nil }
            let expired: Bool = wait.withLockedValue {
                $0.token = token
                return $0.expired
            }
            if expired { shared.removeWaiter(token) }
            return {
                shared.removeWaiter(token)
                expiry.cancel()
            }
        }
        try await withCancellableContinuation(start)
    }

    /// Calls `completion` once the subscription is ready (`nil`) or has failed or stopped (the error).
    public func whenReady(_ completion: @escaping @Sendable ((any Error)?) -> Void) {
        shared.whenSettled { result in
            switch result {
            case .success: completion(nil)
            case .failure(let error): completion(error)
            }
        }
    }

    // MARK: - Ending

    /// Releases this handle. When no handle uses the subscription for its `notInUseTimeout`, `unsub` is sent.
    /// Idempotent.
    public func stop() {
        let release: String? = binding.withLockedValue { binding in
            defer { binding.stopped = true }
            // An unbound handle is released when it is bound (``bind(to:)`` says it was stopped).
            return !binding.stopped && binding.isBound ? binding.id : nil
        }
        guard let release else { return }
        client?.release(subscriptionID: release)
    }
}

/// What every handle of one server subscription shares: its status and the callbacks waiting for it to settle.
final class SubscriptionState: Sendable {
    let name: String

    private struct State {
        /// Protected by `state`'s lock.
        var status = SubscriptionStatus.pending
        /// Protected by `state`'s lock; keyed by registration order.
        var waiters: [Int: @Sendable (Result<Void, any Error>) -> Void] = [:]
        /// Protected by `state`'s lock.
        var nextToken = 0
        /// The states of handles made inside a transaction that joined this subscription (``follow(_:)``): each
        /// takes every status this one takes. Protected by `state`'s lock.
        var followers: [Follower] = []
    }

    private struct Follower {
        weak var state: SubscriptionState?
    }

    private let state = NIOLockedValueBox(State())
    private let broadcaster = Broadcaster<SubscriptionStatus>(bufferLimit: 16, current: .pending)
    /// Where waiters run when the status settles (the client's callback queue): never on the client queue, which
    /// settles it, so a waiter may subscribe, call or stop again.
    private let userCode: UserCodeQueue

    init(name: String, userCode: UserCodeQueue) {
        self.name = name
        self.userCode = userCode
    }

    var status: SubscriptionStatus { state.withLockedValue { $0.status } }

    var statusUpdates: AsyncStream<SubscriptionStatus> { broadcaster.makeStream() }

    /// Runs `callback` once ready, failed or stopped (at once if already so); never under the lock. Returns a token
    /// for ``removeWaiter(_:)`` when it waits.
    @discardableResult
    func whenSettled(_ callback: @escaping @Sendable (Result<Void, any Error>) -> Void) -> Int? {
        let (result, token): (Result<Void, any Error>?, Int?) = state.withLockedValue { state in
            if let result = Self.result(state.status, name: name) { return (result, nil) }
            defer { state.nextToken += 1 }
            state.waiters[state.nextToken] = callback
            return (nil, state.nextToken)
        }
        if let result { callback(result) }
        return token
    }

    /// Forgets a waiter (its wait was cancelled).
    func removeWaiter(_ token: Int) {
        _ = state.withLockedValue { $0.waiters.removeValue(forKey: token) }
    }

    /// How many callbacks wait (for tests).
    var waiterCount: Int { state.withLockedValue { $0.waiters.count } }

    /// Sets the status and runs the waiters if it settled; the followers (``follow(_:)``) take it too.
    func update(_ status: SubscriptionStatus) {
        let (changed, waiters, result, followers):
            (
                Bool, [@Sendable (Result<Void, any Error>) -> Void], Result<Void, any Error>?, [SubscriptionState]
            ) = state.withLockedValue { state in
                let changed = state.status != status
                state.status = status
                state.followers.removeAll { $0.state == nil }
                let followers = state.followers.compactMap(\.state)
                guard let result = Self.result(status, name: name) else { return (changed, [], nil, followers) }
                defer { state.waiters.removeAll() }
                return (changed, state.waiters.sorted { $0.key < $1.key }.map(\.value), result, followers)
            }
        if changed { broadcaster.yield(status) }
        switch status {
        case .failed, .stopped: broadcaster.finish()
        case .pending, .ready: break
        }
        if let result, !waiters.isEmpty {
            userCode.run { for waiter in waiters { waiter(result) } }
        }
        for follower in followers { follower.update(status) }
    }

    /// Stops taking `leader`'s statuses (a handle stopped while it was being bound).
    func stopFollowing(_ leader: SubscriptionState) {
        leader.state.withLockedValue { state in state.followers.removeAll { $0.state === self } }
    }

    /// Makes this state (an unbound handle's, which joined an existing subscription when it was bound) take
    /// `leader`'s status now and every status it takes from now on. The current status is taken under `leader`'s
    /// lock, so an update racing with this one reaches this state after it.
    func follow(_ leader: SubscriptionState) {
        precondition(leader !== self, "a subscription state follows another one")
        leader.state.withLockedValue { state in
            state.followers.append(Follower(state: self))
            update(state.status)
        }
    }

    private static func result(_ status: SubscriptionStatus, name: String) -> Result<Void, any Error>? {
        switch status {
        case .pending: return nil
        case .ready: return .success(())
        case .failed(let error): return .failure(error.thrown)
        case .stopped: return .failure(SubscriptionStoppedError(name: name))
        }
    }
}
