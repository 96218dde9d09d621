import XCTest

@testable import MeteorDDP

/// The app's lifecycle as event scripts for ``ClientCore``: ``BackgroundPolicy``'s rules on entering the background,
/// and on coming back the staleness rule (a socket silent for longer than the heartbeat interval is pinged and
/// replaced at once if nothing answers), a disconnected client connecting and a waiting one retrying at once.
final class ClientCoreAppLifecycleTests: XCTestCase {
    private func describe(_ actions: [ClientCore.Action]) -> [String] { ClientCore.describe(actions) }

    private func connected(_ policy: BackgroundPolicy = .keepConnection) -> ClientCore {
        var configuration = DDPClient.Configuration()
        configuration.resumesSessions = false
        configuration.heartbeatInterval = .seconds(10)
        configuration.backgroundPolicy = policy
        return ClientCore.established(configuration)
    }

    func testASocketSilentForLongerThanTheHeartbeatIntervalIsPingedAndReplacedIfNothingAnswers() {
        var core = connected()
        XCTAssertEqual(describe(core.handle(.enteredBackground)), [], "the default keeps the connection")
        XCTAssertEqual(
            describe(core.handle(.enteringForeground(silentFor: .seconds(5)))), [], "heard from recently: trusted")
        _ = core.handle(.enteredBackground)
        XCTAssertEqual(
            describe(core.handle(.enteringForeground(silentFor: .seconds(60)))),
            ["send(ping)", "schedule(foregroundPing)"])
        XCTAssertEqual(
            describe(core.handle(.timerFired(.foregroundPing))),
            [
                "cancel(heartbeatInterval)", "cancel(heartbeatTimeout)", "closeTransport", "report(heartbeatTimedOut)",
                "waitToRetry(0)"
            ], "replaced now, not after the heartbeat timeout")
    }

    func testAnAnsweredForegroundPingKeepsTheSocket() {
        var core = connected()
        _ = core.handle(.enteredBackground)
        _ = core.handle(.enteringForeground(silentFor: .seconds(60)))
        XCTAssertEqual(describe(core.handle(.frameReceived(counted: false))), ["cancel(foregroundPing)"])
        XCTAssertEqual(describe(core.handle(.timerFired(.foregroundPing))), [], "a stale firing does nothing")
    }

    func testPausedHeartbeatsRestartWhenTheAppComesBack() {
        var core = connected(.pauseHeartbeats)
        XCTAssertEqual(
            describe(core.handle(.enteredBackground)), ["cancel(heartbeatInterval)", "cancel(heartbeatTimeout)"])
        XCTAssertEqual(describe(core.handle(.timerFired(.heartbeatInterval))), [], "no ping in the background")
        XCTAssertEqual(
            describe(core.handle(.enteringForeground(silentFor: .seconds(1)))),
            ["cancel(heartbeatInterval)", "cancel(heartbeatTimeout)", "schedule(heartbeatInterval)"])
    }

    func testTheDisconnectPolicyDisconnectsAfterItsGraceAndConnectsOnComingBack() {
        var core = connected(.disconnect(after: .seconds(30)))
        XCTAssertEqual(describe(core.handle(.enteredBackground)), ["schedule(backgroundDisconnect)"])
        XCTAssertEqual(
            describe(core.handle(.enteringForeground(silentFor: .seconds(1)))), ["cancel(backgroundDisconnect)"],
            "a short stay keeps the connection")
        XCTAssertEqual(describe(core.handle(.timerFired(.backgroundDisconnect))), [], "a stale firing does nothing")

        _ = core.handle(.enteredBackground)
        let disconnected = describe(core.handle(.timerFired(.backgroundDisconnect)))
        XCTAssertTrue(disconnected.contains("endSession"), "the server ends the session at once: \(disconnected)")
        XCTAssertTrue(disconnected.contains("status(offline)"), "\(disconnected)")
        let back = describe(core.handle(.enteringForeground(silentFor: nil)))
        XCTAssertTrue(back.contains { $0.hasPrefix("openTransport") }, "connects again: \(back)")
    }

    func testAClientWaitingForItsBackOffTriesAtOnce() {
        var core = connected()
        _ = core.handle(.transportClosed(nil, generation: core.connectionGeneration))
        let back = describe(core.handle(.enteringForeground(silentFor: nil)))
        XCTAssertEqual(back.first, "cancel(retry)", "\(back)")
        XCTAssertTrue(back.contains { $0.hasPrefix("openTransport") }, "\(back)")
    }

    // MARK: - Review findings

    /// A client offline until the network comes back is not "disconnected" by the policy (before, the disconnect
    /// cleared its wait for the network, and neither reachability nor coming back connected it again).
    func testTheDisconnectPolicyLeavesAClientWaitingForTheNetworkAlone() {
        var core = connected(.disconnect(after: .seconds(30)))
        _ = core.handle(.networkReachabilityChanged(reachable: false))
        _ = core.handle(.transportClosed(nil, generation: core.connectionGeneration))
        _ = core.handle(.enteredBackground)
        XCTAssertEqual(describe(core.handle(.timerFired(.backgroundDisconnect))), [])
        let reachable = describe(core.handle(.networkReachabilityChanged(reachable: true)))
        XCTAssertTrue(reachable.contains { $0.hasPrefix("openTransport") }, "\(reachable)")
    }

    /// The app's own `disconnect()` after the policy's wins: coming back does not connect.
    func testTheAppsDisconnectWinsOverThePolicys() {
        var core = connected(.disconnect(after: .seconds(30)))
        _ = core.handle(.enteredBackground)
        _ = core.handle(.timerFired(.backgroundDisconnect))
        _ = core.handle(.disconnectRequested)
        XCTAssertEqual(describe(core.handle(.enteringForeground(silentFor: nil))), ["cancel(backgroundDisconnect)"])
    }

    /// A foreground ping still unanswered when the app leaves again is forgotten (under `pauseHeartbeats` it would
    /// have closed the socket the policy keeps).
    func testAForegroundPingIsForgottenWhenTheAppLeavesAgain() {
        var core = connected(.pauseHeartbeats)
        _ = core.handle(.enteredBackground)
        XCTAssertEqual(
            describe(core.handle(.enteringForeground(silentFor: .seconds(60)))).suffix(2),
            ["send(ping)", "schedule(foregroundPing)"])
        XCTAssertTrue(describe(core.handle(.enteredBackground)).contains("cancel(foregroundPing)"))
        XCTAssertEqual(describe(core.handle(.timerFired(.foregroundPing))), [], "the socket is kept")
    }
}
