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
public final class Subscription: Sendable {
    /// The publication's name.
    public let name: String
    /// The publication's parameters.
    public let params: [EJSONValue]
    /// The subscription id on the wire (shared by every handle of the same server subscription).
    public let id: String

    let shared: SubscriptionState
    private weak let client: DDPClient?
    private let stopped = NIOLockedValueBox(false)

    init(name: String, params: [EJSONValue], id: String, shared: SubscriptionState, client: DDPClient) {
        self.name = name
        self.params = params
        self.id = id
        self.shared = shared
        self.client = client
    }

    deinit {
        stop()
    }

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
        let first = stopped.withLockedValue { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        client?.release(subscriptionID: id)
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

    /// Sets the status and runs the waiters if it settled.
    func update(_ status: SubscriptionStatus) {
        let (changed, waiters, result):
            (Bool, [@Sendable (Result<Void, any Error>) -> Void], Result<Void, any Error>?) = state.withLockedValue {
                state in
                let changed = state.status != status
                state.status = status
                guard let result = Self.result(status, name: name) else { return (changed, [], nil) }
                defer { state.waiters.removeAll() }
                return (changed, state.waiters.sorted { $0.key < $1.key }.map(\.value), result)
            }
        if changed { broadcaster.yield(status) }
        switch status {
        case .failed, .stopped: broadcaster.finish()
        case .pending, .ready: break
        }
        if let result, !waiters.isEmpty {
            userCode.run { for waiter in waiters { waiter(result) } }
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
