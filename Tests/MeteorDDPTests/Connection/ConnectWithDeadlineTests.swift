import EJSON
import TestSupport
import XCTest

@testable import MeteorDDP

/// `connect(timeout:)`: returns once connected; an unreachable server or a refused upgrade does not wait forever.
final class ConnectWithDeadlineTests: XCTestCase {
    /// Waits until the client made its connection attempt (`connect(timeout:)` schedules its deadline before that).
    private func deadlineScheduled(_ harness: ClientHarness, _ timeout: Duration) async throws {
        try await withTimeout(5, "connection attempt") { await harness.transport.waitUntilConnecting() }
        XCTAssertTrue(harness.scheduler.pendingDelays.contains(timeout), "\(harness.scheduler.pendingDelays)")
    }

    func testReturnsOnceConnected() async throws {
        let harness = ClientHarness()
        let connecting = Task { try await harness.client.connect(timeout: .seconds(10)) }
        try await deadlineScheduled(harness, .seconds(10))
        harness.settle()
        harness.transport.open()
        harness.settle()
        harness.receive(.connected(session: "S"))
        try await withTimeout(5, "connected") { try await connecting.value }
        XCTAssertEqual(harness.status, .connected)
    }

    func testThrowsTheLastAttemptsReasonAtTheDeadline() async throws {
        let harness = ClientHarness()
        let connecting = Task { try await harness.client.connect(timeout: .seconds(10)) }
        try await deadlineScheduled(harness, .seconds(10))
        harness.settle()
        harness.transport.fail(
            TransportError(.upgradeRefused(status: 503), "the server answered the upgrade with HTTP 503"))
        harness.settle()
        harness.advance(by: .seconds(10))
        do {
            try await withTimeout(5, "deadline") { try await connecting.value }
            XCTFail("never connected")
        } catch let error as DDPError {
            XCTAssertEqual(error.code, .connectTimedOut)
            XCTAssertEqual(error.transportError?.kind, .upgradeRefused(status: 503))
            XCTAssertTrue(error.message.contains("HTTP 503"), error.message)
        }
    }

    func testAClosedClientThrowsAtOnce() async throws {
        let harness = ClientHarness()
        harness.client.close()
        do {
            try await withTimeout(5, "closed") { try await harness.client.connect(timeout: .seconds(10)) }
            XCTFail("closed")
        } catch let error as DDPError {
            XCTAssertEqual(error.code, .clientClosed)
        }
    }

    /// The app's own disconnect (and close) is not an error: nothing is published on `errors`.
    func testTheClientsOwnDisconnectIsNotReportedAsAnError() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let errors = Locked<[DDPError]>([])
        let stream = harness.client.errors
        let collecting = Task { for await error in stream { errors.mutate { $0.append(error) } } }
        harness.client.disconnect()
        harness.settle()
        harness.transport.fail(TransportError(.other, "the probe")) // an error after it: the stream carries it
        harness.client.connect()
        harness.settle()
        harness.transport.open()
        harness.settle()
        harness.receive(.connected(session: "S2"))
        harness.transport.fail(TransportError(.other, "dropped"))
        harness.settle()
        harness.client.close()
        _ = await collecting.value
        XCTAssertEqual(errors.value.map(\.message), ["connection lost: dropped"])
    }
}
