import EJSON
import NIOConcurrencyHelpers
import Observation

extension DDPClient {
    /// The logged-in user's own document from the `users` collection (Meteor's `Meteor.user()`): `nil` when logged
    /// out, or until the server publishes it (Meteor's accounts publish it to its owner automatically).
    public var user: Document? {
        account.flatMap { database.collection("users").document(id: $0.userID) }
    }

    /// The logged-in user's document, decoded, as an `Observable` model that follows logins, logouts and changes to
    /// the document, on `scheduler` (the main actor by default).
    @available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *)
    public func observedUser<Model: Decodable & Sendable>(
        as model: Model.Type, scheduler: ObservationScheduler = .mainActor
    ) -> ObservedUser<Model> {
        ObservedUser(client: self, scheduler: scheduler)
    }
}

/// The logged-in user as an `Observable` model (see ``DDPClient/observedUser(as:scheduler:)``).
@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *)
public final class ObservedUser<Model: Decodable & Sendable>: Observable, @unchecked Sendable {
    // @unchecked because the mutable state is in `state`, protected by its lock.

    private struct State {
        var userID: String?
        var user: Model?
        var logoutReason: LogoutReason?
        var live: LiveQuery?
        var token: ObservationToken?
        /// Bumped by every login or logout, so a stale live query's late snapshot is ignored.
        var generation = 0
        /// Set by ``stop()``: a login or logout already queued changes nothing after it.
        var stopped = false
    }

    private let registrar = ObservationRegistrar()
    private let state = NIOLockedValueBox(State())
    private let task = NIOLockedValueBox<Task<Void, Never>?>(nil)

    init(client: DDPClient, scheduler: ObservationScheduler) {
        let accounts = client.accountUpdates
        let started = Task { [weak self, weak client] in
            for await account in accounts {
                guard let self, let client else { return }
                let reason = account == nil ? client.logoutReason : nil
                scheduler.schedule { [weak self] in
                    self?.follow(account?.userID, reason: reason, client: client, scheduler: scheduler)
                }
            }
        }
        task.withLockedValue { $0 = started }
    }

    deinit {
        stop()
    }

    /// The logged-in user's id (`nil` when logged out).
    public var userID: String? {
        registrar.access(self, keyPath: \.user)
        return state.withLockedValue { $0.userID }
    }

    /// Why the user was logged out (``DDPClient/logoutReason``): `nil` while logged in, or when nobody was.
    public var logoutReason: LogoutReason? {
        registrar.access(self, keyPath: \.logoutReason)
        return state.withLockedValue { $0.logoutReason }
    }

    /// The logged-in user's document, decoded (`nil` when logged out, not published yet, or not decodable).
    public var user: Model? {
        registrar.access(self, keyPath: \.user)
        return state.withLockedValue { $0.user }
    }

    /// Stops following; the model keeps its last value.
    public func stop() {
        task.withLockedValue { $0 }?.cancel()
        let (token, live) = state.withLockedValue { state in
            state.stopped = true
            state.generation += 1
            return (state.token, state.live)
        }
        token?.cancel()
        live?.stop()
    }

    /// Runs on the scheduler: a login or logout replaces the followed document.
    private func follow(_ userID: String?, reason: LogoutReason?, client: DDPClient, scheduler: ObservationScheduler) {
        registrar.withMutation(of: self, keyPath: \.logoutReason) {
            state.withLockedValue { state in
                if !state.stopped { state.logoutReason = reason }
            }
        }
        let (previousToken, previousLive, unchanged) = state.withLockedValue { state in
            (state.token, state.live, state.stopped || (state.live != nil && state.userID == userID))
        }
        guard !unchanged else { return }
        previousToken?.cancel()
        previousLive?.stop()
        let generation: Int = state.withLockedValue { state in
            state.token = nil
            state.live = nil
            state.generation += 1
            return state.generation
        }
        registrar.withMutation(of: self, keyPath: \.user) {
            state.withLockedValue { state in
                state.userID = userID
                state.user = nil
            }
        }
        guard let userID, let live = try? client.database.collection("users").observe(["_id": .string(userID)]) else {
            return
        }
        let cache = DecodedDocuments<Model>()
        let token = live.onChange(on: scheduler.dispatchQueue) { [weak self] snapshot in
            guard let self, self.state.withLockedValue({ $0.generation == generation }) else { return }
            let user = (try? cache.decode(snapshot))?.values.first
            self.registrar.withMutation(of: self, keyPath: \.user) { self.state.withLockedValue { $0.user = user } }
        }
        state.withLockedValue { state in
            state.live = live
            state.token = token
        }
    }
}
