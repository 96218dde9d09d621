import XCTest

@testable import MeteorDDP

/// Event scripts for the connection lifecycle: one event per line, the actions it must produce.
final class ConnectionStateMachineTests: XCTestCase {
    private var machine = ConnectionStateMachine(supportedVersions: DDPVersion.supported)

    override func setUp() {
        machine = ConnectionStateMachine(supportedVersions: DDPVersion.supported)
    }

    func testConnectingOpensTheTransportAndSendsConnectWhenTheSocketOpens() {
        XCTAssertEqual(
            machine.connectRequested(),
            [.openTransport, .scheduleConnectTimeout, .publishStatus(.init(state: .connecting))])
        XCTAssertEqual(
            machine.transportOpened(),
            [.sendConnect(.connect(session: nil, version: .v1, support: DDPVersion.supported)), .resetSession])
        XCTAssertEqual(
            machine.receivedConnected(session: "s1"),
            [
                .cancelConnectTimeout, .startHeartbeat,
                .sessionEstablished(session: "s1", version: .v1, isReconnect: false),
                .publishStatus(.init(state: .connected, sessionStart: .new))
            ]
        )
        XCTAssertEqual(machine.version, .v1)
    }

    func testConnectIsIgnoredWhileConnectingOrConnected() {
        _ = machine.connectRequested()
        XCTAssertEqual(machine.connectRequested(), [])
        _ = machine.transportOpened()
        _ = machine.receivedConnected(session: "s1")
        XCTAssertEqual(machine.connectRequested(), [])
    }

    func testReconnectSendsThePreviousSessionID() {
        connect(session: "s1")
        let lost = DDPError.connectionLost("closed")
        XCTAssertEqual(
            machine.transportClosed(lost),
            [.stopHeartbeat, .connectionLost(lost), .scheduleRetry(retryCount: 0, reason: lost)])
        XCTAssertEqual(
            machine.retryElapsed(),
            [.openTransport, .scheduleConnectTimeout, .publishStatus(.init(state: .connecting, retryCount: 1))])
        XCTAssertEqual(
            machine.transportOpened(),
            [.sendConnect(.connect(session: "s1", version: .v1, support: DDPVersion.supported)), .resetSession])
        XCTAssertEqual(
            machine.receivedConnected(session: "s2"),
            [
                .cancelConnectTimeout, .startHeartbeat,
                .sessionEstablished(session: "s2", version: .v1, isReconnect: true),
                .publishStatus(.init(state: .connected, sessionStart: .new))
            ]
        )
    }

    func testRetryCountGrowsWithEachFailedAttemptAndResetsOnConnected() {
        _ = machine.connectRequested()
        let lost = DDPError.connectionLost("refused")
        XCTAssertEqual(
            machine.transportClosed(lost), [.cancelConnectTimeout, .scheduleRetry(retryCount: 0, reason: lost)])
        _ = machine.retryElapsed()
        XCTAssertEqual(
            machine.transportClosed(lost), [.cancelConnectTimeout, .scheduleRetry(retryCount: 1, reason: lost)])
        _ = machine.retryElapsed()
        XCTAssertEqual(
            machine.transportClosed(lost), [.cancelConnectTimeout, .scheduleRetry(retryCount: 2, reason: lost)])
        _ = machine.retryElapsed()
        _ = machine.transportOpened()
        _ = machine.receivedConnected(session: "s")
        let dropped = DDPError.connectionLost("dropped")
        XCTAssertEqual(
            machine.transportClosed(dropped),
            [.stopHeartbeat, .connectionLost(dropped), .scheduleRetry(retryCount: 0, reason: dropped)])
    }

    func testServerRequestingAnotherSupportedVersionReconnectsProposingIt() {
        _ = machine.connectRequested()
        _ = machine.transportOpened()
        XCTAssertEqual(
            machine.receivedFailed(version: "pre1"),
            [.cancelConnectTimeout, .closeTransport, .openTransport, .scheduleConnectTimeout])
        XCTAssertEqual(
            machine.transportOpened(),
            [.sendConnect(.connect(session: nil, version: .pre1, support: DDPVersion.supported)), .resetSession])
        let actions = machine.receivedConnected(session: "s")
        XCTAssertFalse(actions.contains(.startHeartbeat), "pre1 has no heartbeats")
        XCTAssertEqual(machine.version, .pre1)
    }

    func testServerRequestingAnUnsupportedVersionFailsWithoutRetrying() {
        _ = machine.connectRequested()
        _ = machine.transportOpened()
        let error = DDPError.versionNegotiationFailed(serverVersion: "bla")
        XCTAssertEqual(
            machine.receivedFailed(version: "bla"),
            [.cancelConnectTimeout, .closeTransport, .publishStatus(.init(state: .failed, reason: error))]
        )
        XCTAssertEqual(error.message, "DDP version negotiation failed; server requested version bla")
        XCTAssertEqual(machine.retryElapsed(), [])
    }

    func testServerRepeatingTheProposedVersionInFailedIsAFailureNotALoop() {
        _ = machine.connectRequested()
        _ = machine.transportOpened()
        let actions = machine.receivedFailed(version: "1")
        XCTAssertEqual(
            actions.last, .publishStatus(.init(state: .failed, reason: .versionNegotiationFailed(serverVersion: "1"))))
    }

    func testConnectTimeoutClosesTheAttemptAndWaits() {
        _ = machine.connectRequested()
        XCTAssertEqual(
            machine.connectTimeoutElapsed(),
            [.closeTransport, .scheduleRetry(retryCount: 0, reason: .connectTimedOut())])
    }

    func testHeartbeatTimeoutDropsTheConnection() {
        connect(session: "s")
        let error = DDPError.heartbeatTimedOut()
        XCTAssertEqual(
            machine.heartbeatTimedOut(),
            [.stopHeartbeat, .closeTransport, .connectionLost(error), .scheduleRetry(retryCount: 0, reason: error)])
    }

    func testLosingTheConnectionWhileUnreachableGoesOfflineAndReachabilityReconnects() {
        connect(session: "s")
        _ = machine.networkReachabilityChanged(reachable: false)
        let lost = DDPError.connectionLost("down")
        XCTAssertEqual(
            machine.transportClosed(lost),
            [.stopHeartbeat, .connectionLost(lost), .publishStatus(.init(state: .offline, reason: lost))])
        XCTAssertEqual(
            machine.networkReachabilityChanged(reachable: true),
            [.openTransport, .scheduleConnectTimeout, .publishStatus(.init(state: .connecting, retryCount: 0))],
            "offline only for want of a network: reachable again connects at once")
    }

    func testReachabilityDoesNotUndoADisconnect() {
        connect(session: "s")
        _ = machine.networkReachabilityChanged(reachable: false)
        _ = machine.transportClosed(.connectionLost("down"))
        _ = machine.disconnectRequested()
        XCTAssertEqual(machine.networkReachabilityChanged(reachable: true), [], "the user asked to be offline")
    }

    func testBecomingReachableWhileWaitingRetriesAtOnceWithoutCountingARetry() {
        _ = machine.connectRequested()
        _ = machine.transportClosed(.connectionLost("refused"))
        XCTAssertEqual(
            machine.networkReachabilityChanged(reachable: true),
            [
                .cancelRetry, .openTransport, .scheduleConnectTimeout,
                .publishStatus(.init(state: .connecting, retryCount: 0))
            ]
        )
    }

    func testDisconnectStopsEverything() {
        connect(session: "s")
        XCTAssertEqual(
            machine.disconnectRequested(),
            [.stopHeartbeat, .endSession, .disconnectedByClient, .publishStatus(.init(state: .offline))])
        XCTAssertEqual(machine.retryElapsed(), [])
        XCTAssertEqual(machine.transportClosed(.connectionLost("late")), [])
    }

    func testDisconnectWhileWaitingCancelsTheRetry() {
        _ = machine.connectRequested()
        _ = machine.transportClosed(.connectionLost("refused"))
        XCTAssertEqual(machine.disconnectRequested(), [.cancelRetry, .publishStatus(.init(state: .offline))])
    }

    func testConnectedBeforeTheSocketOpenedIsIgnored() {
        _ = machine.connectRequested()
        XCTAssertEqual(machine.receivedConnected(session: "s"), [])
    }

    private func connect(session: String) {
        _ = machine.connectRequested()
        _ = machine.transportOpened()
        _ = machine.receivedConnected(session: session)
    }
}
