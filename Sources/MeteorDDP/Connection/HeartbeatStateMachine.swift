/// DDP heartbeats as Meteor's `ddp-common/heartbeat.js` runs them, as a value with no clock.
///
/// Every interval tick: if nothing was received since the previous tick and no ping is outstanding, send a ping
/// and start the timeout; then forget what was seen. Any received message counts as a pong and cancels the
/// timeout. The timeout firing means the connection is dead.
struct HeartbeatStateMachine {
    enum State: Equatable {
        case stopped
        case running(seenMessage: Bool, awaitingPong: Bool)
    }

    enum Action: Equatable, Sendable {
        case scheduleInterval
        case cancelInterval
        case sendPing
        case scheduleTimeout
        case cancelTimeout
        case reportTimeout
    }

    private(set) var state = State.stopped

    mutating func start() -> [Action] {
        state = .running(seenMessage: false, awaitingPong: false)
        return [.cancelInterval, .cancelTimeout, .scheduleInterval]
    }

    mutating func stop() -> [Action] {
        guard case .running = state else { return [] }
        state = .stopped
        return [.cancelInterval, .cancelTimeout]
    }

    mutating func messageReceived() -> [Action] {
        guard case .running(_, let awaitingPong) = state else { return [] }
        state = .running(seenMessage: true, awaitingPong: false)
        return awaitingPong ? [.cancelTimeout] : []
    }

    mutating func intervalElapsed() -> [Action] {
        guard case .running(let seen, let awaitingPong) = state else { return [] }
        var actions: [Action] = []
        var awaiting = awaitingPong
        if !seen && !awaitingPong {
            actions += [.sendPing, .scheduleTimeout]
            awaiting = true
        }
        state = .running(seenMessage: false, awaitingPong: awaiting)
        actions.append(.scheduleInterval)
        return actions
    }

    mutating func timeoutElapsed() -> [Action] {
        guard case .running(_, true) = state else { return [] }
        state = .stopped
        return [.cancelInterval, .reportTimeout]
    }
}
