import EJSON
import MeteorDDP
import MeteorDDPTesting
import TestSupport
import XCTest

/// The test doubles as an app's own tests use them: `MeteorDDP` and `MeteorDDPTesting` imported as any app imports
/// them (no `@testable`), a client over an ``InMemoryTransport`` on a ``ManualScheduler``'s clock.
final class TestDoublesTests: XCTestCase {
    private var transport: InMemoryTransport!
    private var scheduler: ManualScheduler!
    private var client: DDPClient!

    override func setUp() {
        transport = InMemoryTransport()
        scheduler = ManualScheduler()
        var configuration = DDPClient.Configuration()
        configuration.scheduler = scheduler
        configuration.heartbeatInterval = .seconds(10)
        configuration.heartbeatTimeout = .seconds(5)
        client = DDPClient(transport: transport, configuration: configuration)
    }

    override func tearDown() {
        client.close()
    }

    private static func isConnect(_ message: ClientMessage) -> Bool {
        if case .connect = message { return true }
        return false
    }

    private func waitForStatus(_ state: ConnectionStatus.State) async throws {
        try await withTimeout(10, "status \(state)") { [client] in
            for await status in client!.statusUpdates where status.state == state { return }
        }
    }

    /// Connects: the client asks the transport for a connection, the test opens it, the client sends `connect`, the
    /// test answers `connected`.
    private func connect() async throws {
        client.connect()
        await transport.waitUntilConnecting()
        transport.open()
        await transport.waitUntilSent(count: 1, where: Self.isConnect)
        transport.receive(.connected(session: "session-1"))
        try await waitForStatus(.connected)
    }

    func testTheTestDrivesTheHandshake() async throws {
        XCTAssertEqual(transport.connectionAttempts, 0, "nothing before connect()")
        try await connect()
        XCTAssertEqual(transport.connectionAttempts, 1)
        XCTAssertTrue(transport.isOpen)
        guard case .connect(let session, _, let version, _)? = transport.sentMessages.first else {
            return XCTFail("connect goes first, not \(transport.sentFrames)")
        }
        XCTAssertNil(session)
        XCTAssertEqual(version, DDPVersion.supported.first)
    }

    func testACallsFrameIsSeenAndItsAnswerReceived() async throws {
        try await connect()
        let call = Task { [client] in try await client!.call("add", params: [1, 2]) }
        await transport.waitUntilSent(count: 1) { message in
            if case .method(_, "add", [1, 2], _) = message { return true }
            return false
        }
        guard case .method(let id, _, _, _)? = transport.sentMessages.last else { return XCTFail("no method frame") }
        transport.receive(.result(id: id, result: 3, error: nil))
        transport.receive(.updated(methodIDs: [id]))
        let value = try await value(of: call)
        XCTAssertEqual(value, 3)
    }

    /// Timers run on the scheduler's clock: the heartbeat's ping goes out when the test moves the clock past the
    /// interval, and a connection the test fails is retried when it moves past the back-off.
    func testTimersRunWhenTheTestMovesTheClock() async throws {
        try await connect()
        transport.clearSentFrames()
        XCTAssertTrue(scheduler.pendingDelays.contains(.seconds(10)), "the heartbeat interval is armed")
        scheduler.advance(by: .seconds(9))
        XCTAssertEqual(transport.sentFrames, [], "not due yet")
        scheduler.advance(by: .seconds(1))
        await transport.waitUntilSent(count: 1) { message in
            if case .ping = message { return true }
            return false
        }

        let before = scheduler.now
        transport.fail()
        try await waitForStatus(.waiting)
        XCTAssertEqual(client.status.retryTime.map { $0 > before }, true, "a retry is planned on this clock")
        scheduler.runAll()
        await transport.waitUntilConnecting(attempts: 2)
    }

    func testTheManualClockRunsDueActionsInOrderAndSkipsCancelledOnes() {
        let scheduler = ManualScheduler(start: Date(timeIntervalSince1970: 0))
        let ran = Locked<[String]>([])
        _ = scheduler.schedule(after: .seconds(2)) { ran.mutate { $0.append("2 s") } }
        _ = scheduler.schedule(after: .seconds(1)) { ran.mutate { $0.append("1 s") } }
        let cancelled = scheduler.schedule(after: .milliseconds(1500)) { ran.mutate { $0.append("cancelled") } }
        cancelled.cancel()
        XCTAssertEqual(scheduler.pendingDelays.count, 2)
        scheduler.advance(by: .milliseconds(1500))
        XCTAssertEqual(ran.value, ["1 s"])
        XCTAssertEqual(scheduler.now, Date(timeIntervalSince1970: 1.5))
        scheduler.runAll()
        XCTAssertEqual(ran.value, ["1 s", "2 s"])
        XCTAssertEqual(scheduler.now, Date(timeIntervalSince1970: 2))
    }
}
