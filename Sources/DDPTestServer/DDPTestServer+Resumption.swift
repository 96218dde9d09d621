import Foundation

/// Session resumption as Meteor 3.5+'s server does it (ddp-semantics §13), and the controls tests drive it with.
extension DDPTestServer {
    /// How a `connect` ended.
    public enum ConnectOutcome: Sendable, Equatable {
        /// A new session: the client offered none to resume (or offered one without a count).
        case newSession
        /// The session offered was resumed: same id, then what it queued.
        case resumed
        /// The session offered waited in its grace period, but the count differed from what it sent: it ended, and
        /// a new session started.
        case refusedCountMismatch
        /// The session offered was not waiting (ended, expired, unknown, or still on a live socket): a new session.
        case refusedNotWaiting
    }

    /// How every `connect` so far ended, in order.
    public var connectOutcomes: [ConnectOutcome] { state.withLockedValue { $0.connectOutcomes } }

    /// How many sessions ended because more messages waited for their client than
    /// ``Configuration/maxMessageQueueLength``.
    public var gracePeriodOverflows: Int { state.withLockedValue { $0.gracePeriodOverflows } }

    /// How many times session `session` ran the method call with id `id` (a `method` re-sent with the same id runs
    /// again, as on Meteor's server).
    public func runs(ofCall id: String, inSession session: String) -> Int {
        state.withLockedValue { $0.callRuns["\(session) \(id)"] ?? 0 }
    }

    /// The calls some session ran more than once, as "session id" pairs.
    public var callsRunMoreThanOnce: [String] {
        state.withLockedValue { $0.callRuns.filter { $0.value > 1 }.map(\.key).sorted() }
    }

    /// Closes every open connection as a network failure would: their sessions wait in their grace period for their
    /// clients to resume them (unlike ``dropAllConnections()``, Meteor's `connection.close()`).
    public func severAllConnections() {
        let connections = state.withLockedValue { Array($0.connections.values) }
        for connection in connections { connection.sever() }
    }

    /// Ends every session waiting in its grace period now (as if the period had run out).
    public func endSessionsInGracePeriod() {
        perform {
            for session in Array(liveSessions.values) where session.isInGracePeriod { session.end() }
        }
    }

    /// Returns once no session, connected or in its grace period, has a message waiting or running (a slow
    /// publication, a method's latency): every frame the sessions received has been handled. Sessions in their grace
    /// period go on running what their lost socket delivered, as Meteor 3.5+'s do. No polling.
    public func waitUntilSessionsIdle() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                self.idleWaiters.append(continuation)
                self.sessionBecameIdle()
            }
        }
    }

    /// A session has nothing waiting or running any more (or ended): the idle waiters resume once all are. Server
    /// queue.
    func sessionBecameIdle() {
        guard !idleWaiters.isEmpty, liveSessions.values.allSatisfy(\.isIdle) else { return }
        let waiters = idleWaiters
        idleWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    /// The number of sessions waiting in their grace period.
    public var sessionsInGracePeriod: Int {
        perform { liveSessions.values.count { $0.isInGracePeriod } }
    }

    func noteConnectOutcome(_ outcome: ConnectOutcome) {
        state.withLockedValue { $0.connectOutcomes.append(outcome) }
    }

    func noteGracePeriodOverflow() {
        state.withLockedValue { $0.gracePeriodOverflows += 1 }
    }

    func noteRun(ofCall id: String, inSession session: String) {
        state.withLockedValue { $0.callRuns["\(session) \(id)", default: 0] += 1 }
    }
}
