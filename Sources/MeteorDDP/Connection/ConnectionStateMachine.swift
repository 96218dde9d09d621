/// The connection lifecycle as a value: offline → connecting → connected / waiting / failed
/// (socket-stream-client's status plus the DDP handshake of livedata_connection).
///
/// It owns no clock and does no I/O: every input is an event method returning the actions the driver must
/// perform, in order. Timers are actions (`scheduleRetry`, `scheduleConnectTimeout`) and their firing is an event.
struct ConnectionStateMachine {
    // MARK: - State

    enum State {
        /// Not connected and not trying.
        case offline
        /// A socket attempt is under way; `socketOpen` once the transport opened and `connect` was sent.
        case connecting(retryCount: Int, socketOpen: Bool, proposed: DDPVersion)
        /// The DDP session is established.
        case connected(session: String, version: DDPVersion)
        /// Waiting for the back-off to elapse.
        case waiting(retryCount: Int)
        /// Gave up for good.
        case failed(DDPError)
    }

    enum Action: Sendable, Equatable {
        case openTransport
        case closeTransport
        case sendConnect(ClientMessage)
        /// A fresh socket is open and `connect` was just sent: re-send methods and subscriptions now (LC `onReset`).
        case resetSession
        case scheduleConnectTimeout
        case cancelConnectTimeout
        case scheduleRetry(retryCount: Int, reason: DDPError)
        case cancelRetry
        case startHeartbeat
        case stopHeartbeat
        case sessionEstablished(session: String, version: DDPVersion, isReconnect: Bool)
        /// The server resumed the session on the new socket (Meteor 3.5+): nothing is reset or sent again, and what
        /// was put aside while the socket was down goes out now.
        case sessionResumed(session: String, version: DDPVersion)
        /// The app ended the session (``DDPClient/disconnect()``, ``DDPClient/close()``): `{"msg":"disconnect"}` goes
        /// out, then the socket closes once it is written (the server then keeps no session to resume).
        case endSession
        case connectionLost(DDPError)
        /// The app disconnected (``DDPClient/disconnect()``, ``DDPClient/close()``): the session ends as on a lost
        /// connection, but nothing went wrong, so nothing is reported on ``DDPClient/errors``.
        case disconnectedByClient
        case publishStatus(ConnectionStatus)
    }

    private(set) var state: State = .offline
    let supportedVersions: [DDPVersion]
    /// The version the next `connect` proposes (set by a `failed` naming a supported version).
    private(set) var versionSuggestion: DDPVersion?
    /// The session of the last `connected`, sent back in the next `connect`.
    private(set) var lastSession: String?
    /// Whether a new socket offers the server to resume the session (Meteor 3.5+'s session resumption).
    let resumesSessions: Bool
    /// Messages received in the session, pings and pongs aside (Meteor's `_receivedCount`): a new session's
    /// `connected` is the first; a resumed session's `connected` counts on.
    private(set) var receivedCount = 0
    /// Whether the session may be resumed on a new socket: not once the app ended it, nor after the server asked for
    /// another DDP version.
    private(set) var sessionResumable = false
    /// The session the open socket's `connect` offered to resume, until the server answers: nothing else is sent
    /// meanwhile.
    private(set) var offeredSession: String?
    /// Whether the network is reachable; when it is not, a lost connection goes offline instead of waiting.
    private(set) var networkReachable = true
    /// Whether the client is offline only because the network was unreachable when the connection was lost (then
    /// reachability coming back connects again; after ``disconnectRequested()`` it does not).
    private(set) var offlineUntilReachable = false

    init(supportedVersions: [DDPVersion], resumesSessions: Bool = false) {
        precondition(!supportedVersions.isEmpty, "at least one DDP version must be supported")
        self.supportedVersions = supportedVersions
        self.resumesSessions = resumesSessions
    }

    private var proposal: DDPVersion { versionSuggestion ?? supportedVersions[0] }

    private var connectMessage: ClientMessage {
        .connect(session: lastSession, version: proposal, support: supportedVersions)
    }

    /// The negotiated version while connected.
    var version: DDPVersion? {
        if case .connected(_, let version) = state { return version }
        return nil
    }

    // MARK: - User requests

    mutating func connectRequested() -> [Action] {
        switch state {
        case .offline, .failed:
            return startAttempt(retryCount: 0)
        case .waiting(let retryCount):
            return [.cancelRetry] + startAttempt(retryCount: retryCount)
        case .connecting, .connected:
            return []
        }
    }

    /// `reconnect()`: retry now while waiting (not counted as a retry), restart when offline or failed.
    mutating func reconnectRequested() -> [Action] {
        connectRequested()
    }

    mutating func disconnectRequested() -> [Action] {
        offlineUntilReachable = false
        sessionResumable = false
        offeredSession = nil
        switch state {
        case .offline:
            return []
        case .failed:
            state = .offline
            return [.publishStatus(ConnectionStatus(state: .offline))]
        case .waiting:
            state = .offline
            return [.cancelRetry, .publishStatus(ConnectionStatus(state: .offline))]
        case .connecting(_, let socketOpen, _):
            state = .offline
            // An open socket has sent `connect`: a session the server resumes (or starts) on it ends too.
            return [
                .cancelConnectTimeout, socketOpen ? .endSession : .closeTransport,
                .publishStatus(ConnectionStatus(state: .offline))
            ]
        case .connected:
            state = .offline
            return [
                .stopHeartbeat, .endSession, .disconnectedByClient,
                .publishStatus(ConnectionStatus(state: .offline))
            ]
        }
    }

    mutating func networkReachabilityChanged(reachable: Bool) -> [Action] {
        networkReachable = reachable
        guard reachable else { return [] }
        switch state {
        case .waiting:
            return connectRequested()
        case .offline where offlineUntilReachable:
            return connectRequested()
        default:
            return []
        }
    }

    // MARK: - Transport events

    mutating func transportOpened() -> [Action] {
        guard case .connecting(let retryCount, false, let proposed) = state else {
            preconditionFailure("Internal inconsistency: transport opened in state \(state)")
        }
        state = .connecting(retryCount: retryCount, socketOpen: true, proposed: proposed)
        if resumesSessions, sessionResumable, let session = lastSession {
            // The reset waits for the answer: the same session back needs none.
            offeredSession = session
            return [
                .sendConnect(
                    .connect(
                        session: session, receivedCount: receivedCount, version: proposed, support: supportedVersions))
            ]
        }
        return [.sendConnect(connectMessage), .resetSession]
    }

    /// A frame of the current socket arrived; `counted`: it is a message other than `ping` and `pong`, as the
    /// server counts what it sends.
    mutating func frameReceived(counted: Bool) {
        if counted { receivedCount += 1 }
    }

    mutating func transportClosed(_ error: DDPError) -> [Action] {
        switch state {
        case .connecting(let retryCount, _, _):
            if error.transportError?.isPermanent == true {
                // Retrying cannot help (a 404 for the URL): fail at once, as a refused DDP version does.
                state = .failed(error)
                return [
                    .cancelConnectTimeout,
                    .publishStatus(ConnectionStatus(state: .failed, retryCount: retryCount, reason: error))
                ]
            }
            return lose(error, retryCount: retryCount, actions: [.cancelConnectTimeout])
        case .connected:
            return lose(error, retryCount: 0, actions: [.stopHeartbeat, .connectionLost(error)])
        case .offline, .waiting, .failed:
            return []
        }
    }

    mutating func connectTimeoutElapsed() -> [Action] {
        guard case .connecting(let retryCount, _, _) = state else { return [] }
        return lose(.connectTimedOut(), retryCount: retryCount, actions: [.closeTransport])
    }

    mutating func heartbeatTimedOut() -> [Action] {
        guard case .connected = state else { return [] }
        let error = DDPError.heartbeatTimedOut()
        return lose(error, retryCount: 0, actions: [.stopHeartbeat, .closeTransport, .connectionLost(error)])
    }

    mutating func retryElapsed() -> [Action] {
        guard case .waiting(let retryCount) = state else { return [] }
        return startAttempt(retryCount: retryCount + 1)
    }

    // MARK: - DDP handshake

    mutating func receivedConnected(session: String) -> [Action] {
        guard case .connecting(_, true, let proposed) = state else {
            return [] // the driver reports an out-of-place `connected`
        }
        let isReconnect = lastSession != nil
        let offered = offeredSession
        offeredSession = nil
        lastSession = session
        sessionResumable = true
        state = .connected(session: session, version: proposed)
        var actions: [Action] = [.cancelConnectTimeout]
        if proposed.hasHeartbeats { actions.append(.startHeartbeat) }
        if offered == session {
            // Resumed: its `connected` counted on like any message.
            actions.append(.sessionResumed(session: session, version: proposed))
            actions.append(.publishStatus(ConnectionStatus(state: .connected, sessionStart: .resumed)))
            return actions
        }
        receivedCount = 1
        // A new session after an offer to resume: the reset the offer put off happens now.
        if offered != nil { actions.append(.resetSession) }
        actions.append(.sessionEstablished(session: session, version: proposed, isReconnect: isReconnect))
        actions.append(
            .publishStatus(ConnectionStatus(state: .connected, sessionStart: offered == nil ? .new : .resumeRefused)))
        return actions
    }

    /// The server refused the proposed version (LC `onMessage` `failed`).
    mutating func receivedFailed(version: String) -> [Action] {
        guard case .connecting(let retryCount, true, let proposed) = state else { return [] }
        let requested = DDPVersion(rawValue: version)
        // Another version is another session: never a resumed one.
        sessionResumable = false
        offeredSession = nil
        if supportedVersions.contains(requested), requested != proposed {
            versionSuggestion = requested
            state = .connecting(retryCount: retryCount, socketOpen: false, proposed: requested)
            return [.cancelConnectTimeout, .closeTransport, .openTransport, .scheduleConnectTimeout]
        }
        let error = DDPError.versionNegotiationFailed(serverVersion: version)
        state = .failed(error)
        return [.cancelConnectTimeout, .closeTransport, .publishStatus(ConnectionStatus(state: .failed, reason: error))]
    }

    // MARK: - Helpers

    private mutating func startAttempt(retryCount: Int) -> [Action] {
        offlineUntilReachable = false
        offeredSession = nil
        state = .connecting(retryCount: retryCount, socketOpen: false, proposed: proposal)
        return [
            .openTransport, .scheduleConnectTimeout,
            .publishStatus(ConnectionStatus(state: .connecting, retryCount: retryCount))
        ]
    }

    private mutating func lose(_ error: DDPError, retryCount: Int, actions: [Action]) -> [Action] {
        if networkReachable {
            state = .waiting(retryCount: retryCount)
            return actions + [.scheduleRetry(retryCount: retryCount, reason: error)]
        }
        state = .offline
        offlineUntilReachable = true
        return actions + [.publishStatus(ConnectionStatus(state: .offline, retryCount: retryCount, reason: error))]
    }
}

extension ConnectionStateMachine {
    /// Whether the session's own frames (calls, subscriptions) go out now: the socket is open and not waiting for the
    /// server to answer an offer to resume.
    var sendsSessionFrames: Bool { isSocketOpen && offeredSession == nil }

    /// Whether frames the session cannot send now are kept for the session's resumption (else a new socket's reset
    /// sends what matters again).
    var keepsSessionFramesForResumption: Bool { resumesSessions && sessionResumable && lastSession != nil }

    /// Whether the client is connecting, connected or waiting for its back-off (not offline, not failed).
    var isActive: Bool {
        switch state {
        case .connecting, .connected, .waiting: return true
        case .offline, .failed: return false
        }
    }

    /// Whether the client waits for its back-off before the next attempt.
    var isWaitingToRetry: Bool {
        if case .waiting = state { return true }
        return false
    }

    /// Whether frames can be sent: the socket is open (handshake pending or done).
    var isSocketOpen: Bool {
        switch state {
        case .connecting(_, let open, _): return open
        case .connected: return true
        case .offline, .waiting, .failed: return false
        }
    }
}
