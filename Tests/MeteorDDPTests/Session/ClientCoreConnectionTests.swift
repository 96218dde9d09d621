import EJSON
import XCTest

@testable import MeteorDDP

/// The connection's life as whole scripts through the core's funnel: inputs in (``ClientCore/handle(_:)``), the
/// actions the client performs out, in order.
final class ClientCoreConnectionTests: XCTestCase {
    /// Connect, the socket opens, the session is established, the heartbeat finds the server silent, the connection is
    /// dropped and retried; the dead socket's late close changes nothing.
    func testConnectEstablishHeartbeatTimeoutAndRetry() {
        var core = ClientCore.scripted()
        XCTAssertEqual(
            describe(core.handle(.connectRequested)),
            ["openTransport(1)", "schedule(connectTimeout)", "status(connecting)"])
        XCTAssertEqual(
            describe(core.handle(.transportOpened(generation: 1))), ["send(connect)", "runHooks(1, 0 hooks)"],
            "connect first, then the new socket's reset (no hooks: the run is over at once)")
        XCTAssertFalse(
            core.reconnectHooksAreRunning, "no hooks: nothing is held (a drain meanwhile, for a stub, goes on)")
        XCTAssertEqual(describe(core.handle(.reconnectHooksFinished(run: 1))), [], "nothing to send again")
        XCTAssertEqual(core.sessionVersion, nil, "not before `connected`")
        XCTAssertEqual(
            describe(core.handle(.connectedReceived(session: "s1"))),
            [
                "cancel(connectTimeout)", "cancel(heartbeatInterval)", "cancel(heartbeatTimeout)",
                "schedule(heartbeatInterval)", "established(s1, reconnect: false)", "status(connected)"
            ])
        XCTAssertEqual(core.sessionVersion, .v1)

        XCTAssertEqual(describe(core.handle(.frameReceived(counted: true))), [], "a sign of life: nothing to do")
        XCTAssertEqual(
            describe(core.handle(.timerFired(.heartbeatInterval))), ["schedule(heartbeatInterval)"],
            "a frame came during the interval: no ping")
        XCTAssertEqual(
            describe(core.handle(.timerFired(.heartbeatInterval))),
            ["send(ping)", "schedule(heartbeatTimeout)", "schedule(heartbeatInterval)"], "silence: a ping")
        XCTAssertEqual(
            describe(core.handle(.timerFired(.heartbeatTimeout))),
            ["cancel(heartbeatInterval)", "closeTransport", "report(heartbeatTimedOut)", "waitToRetry(0)"])
        XCTAssertEqual(
            describe(core.handle(.transportClosed(nil, generation: 1))), [],
            "the closed socket's own close comes late: ignored")
        XCTAssertEqual(
            describe(core.handle(.timerFired(.retry))),
            ["openTransport(3)", "schedule(connectTimeout)", "status(connecting)"])
        XCTAssertEqual(
            describe(core.handle(.transportOpened(generation: 3))), ["send(connect)", "runHooks(2, 0 hooks)"])
        XCTAssertEqual(
            describe(core.handle(.reconnectHooksFinished(run: 2))), [], "no hooks: handed back at once")
        XCTAssertEqual(
            describe(core.handle(.connectedReceived(session: "s2"))),
            [
                "cancel(connectTimeout)", "cancel(heartbeatInterval)", "cancel(heartbeatTimeout)",
                "schedule(heartbeatInterval)", "established(s2, reconnect: true)", "applyQuiescence(resetting: true)",
                "status(connected)"
            ], "a reconnect with nothing to wait for resets the cache at once")
    }

    /// The retry's delay is the configured strategy's, decided by the core.
    func testALostConnectionWaitsTheStrategysDelay() {
        var configuration = DDPClient.Configuration()
        configuration.retryStrategy = RetryStrategy(minTimeout: 3_000)
        var core = ClientCore(configuration: configuration)
        _ = core.handle(.connectRequested)
        let actions = core.handle(.transportClosed(TransportError(.connectFailed, "refused"), generation: 1))
        XCTAssertEqual(describe(actions), ["forgetTransport", "cancel(connectTimeout)", "waitToRetry(0)"])
        guard case .waitToRetry(_, let delay, let reason)? = actions.last else { return XCTFail("no retry") }
        XCTAssertEqual(delay, .seconds(3))
        XCTAssertEqual(reason.code, .connectionLost)
    }

    /// A new socket resumes the login first, then runs the app's hooks with incoming messages held; past the hold
    /// limit the reset goes on without them, and their late return changes nothing.
    func testANewSocketResumesTheLoginThenRunsTheHooksAndTheHoldLimitStopsWaiting() {
        var core = ClientCore.scripted()
        _ = core.handle(.resumeTokenChanged("tok"))
        XCTAssertEqual(describe(core.handle(.reconnectHookSet(name: "app", hook: {}))), [])
        core.call("todos.add")
        _ = core.handle(.connectRequested)
        XCTAssertEqual(
            describe(core.handle(.transportOpened(generation: 1))),
            ["send(connect)", "resumeLogin(tok)", "runHooks(1, 1 hooks)"])
        XCTAssertTrue(core.reconnectHooksAreRunning, "the client holds incoming messages until they return")
        XCTAssertEqual(
            describe(core.handle(.reconnectHooksHoldLimitReached)),
            ["report(limitReached)", "sendCalls(todos.add)", "releaseHeldMessages"])
        XCTAssertEqual(describe(core.handle(.reconnectHooksFinished(run: 1))), [], "too late")
        XCTAssertEqual(describe(core.handle(.reconnectHooksHoldLimitReached)), [], "once")
    }

    /// The hooks returning in time: the calls set aside and the subscriptions go out, then the held messages.
    func testTheHooksReturningReleaseTheCallsTheSubscriptionsAndTheHeldMessages() {
        var core = ClientCore.scripted()
        _ = core.handle(.reconnectHookSet(name: "app", hook: {}))
        core.subscribe("todos", ready: false)
        core.call("todos.add")
        _ = core.handle(.connectRequested)
        XCTAssertEqual(
            describe(core.handle(.transportOpened(generation: 1))), ["send(connect)", "runHooks(1, 1 hooks)"])
        XCTAssertEqual(
            describe(core.handle(.reconnectHooksFinished(run: 1))),
            ["sendCalls(todos.add)", "send(sub)", "releaseHeldMessages"])
        XCTAssertFalse(core.reconnectHooksAreRunning)
    }

    /// A `failed` naming another version this client speaks: a new socket proposes it. One it does not: failed.
    func testVersionNegotiation() {
        var core = ClientCore.scripted()
        _ = core.handle(.connectRequested)
        _ = core.handle(.transportOpened(generation: 1))
        XCTAssertEqual(
            describe(core.handle(.failedReceived(version: "pre2"))),
            ["cancel(connectTimeout)", "closeTransport", "openTransport(3)", "schedule(connectTimeout)"])
        _ = core.handle(.transportOpened(generation: 3))
        XCTAssertEqual(
            describe(core.handle(.failedReceived(version: "7"))),
            ["cancel(connectTimeout)", "closeTransport", "status(failed)"])
        XCTAssertEqual(
            describe(core.handle(.connectedReceived(session: "s"))), ["report(protocolViolation)"],
            "a `connected` nobody asked for is reported")
    }

    /// One pong answers the pings of a batch, with the last one's id; a socket that goes owes none.
    func testPingsOfABatchOweOnePongAndALostSocketOwesNone() {
        var core = ClientCore.scripted()
        _ = core.handle(.connectRequested)
        XCTAssertEqual(describe(core.handle(.pingReceived(id: "a"))), [])
        _ = core.handle(.pingReceived(id: "b"))
        XCTAssertEqual(describe(core.handle(.burstHandled)), ["send(pong b)", "pushCacheUpdates"])
        XCTAssertEqual(describe(core.handle(.burstHandled)), ["pushCacheUpdates"], "answered")
        _ = core.handle(.pingReceived(id: nil))
        _ = core.handle(.transportClosed(nil, generation: 1))
        XCTAssertEqual(describe(core.handle(.burstHandled)), ["pushCacheUpdates"])

        var configuration = DDPClient.Configuration()
        configuration.respondToPings = false
        var silent = ClientCore(configuration: configuration)
        _ = silent.handle(.pingReceived(id: "a"))
        XCTAssertEqual(describe(silent.handle(.burstHandled)), ["pushCacheUpdates"], "respondToPings off")
    }

    /// Events of a transport the client already let go of change nothing.
    func testEventsOfAnOlderTransportAreIgnored() {
        var core = ClientCore.scripted()
        _ = core.handle(.connectRequested)
        _ = core.handle(.timerFired(.connectTimeout))
        XCTAssertEqual(describe(core.handle(.transportOpened(generation: 1))), [])
        XCTAssertEqual(describe(core.handle(.binaryFrameReceived(byteCount: 4, generation: 1))), [])
        XCTAssertEqual(
            describe(core.handle(.binaryFrameReceived(byteCount: 4, generation: core.connectionGeneration))),
            ["report(protocolViolation)"])
    }

    /// Close with calls and subscriptions in flight: the socket closes, each call and subscription is handed back
    /// once, and every later request is answered by nothing.
    func testCloseWithCallsInFlightThenEveryRequestDoesNothing() {
        var core = ClientCore.scripted()
        core.subscribe("todos")
        core.call("a")
        core.call("w", wait: true)
        _ = core.handle(.connectRequested)
        _ = core.handle(.transportOpened(generation: 1))
        _ = core.handle(.reconnectHooksFinished(run: 1))
        _ = core.handle(.connectedReceived(session: "s"))
        XCTAssertEqual(
            describe(core.handle(.closeRequested)),
            [
                "cancel(heartbeatInterval)", "cancel(heartbeatTimeout)", "endSession", "status(offline)",
                "closed(calls: a w, subscriptions: todos)"
            ])
        XCTAssertTrue(core.isClosed)
        for input: ClientCore.Input in [
            .closeRequested, .connectRequested, .reconnectRequested, .disconnectRequested,
            .networkReachabilityChanged(reachable: true)
        ] {
            XCTAssertEqual(describe(core.handle(input)), [], "\(input)")
        }
    }

    private func describe(_ actions: [ClientCore.Action]) -> [String] { ClientCore.describe(actions) }
}
