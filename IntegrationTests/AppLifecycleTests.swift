import DDPTestServer
import EJSON
import Foundation
@_spi(Testing) import MeteorDDP
import XCTest

/// Coming back from the background against DDPTestServer, on the client's manual clock: a socket that heard nothing for
/// longer than the heartbeat interval (the app was suspended) is pinged, and replaced within the foreground ping's
/// timeout when the server does not answer, long before the heartbeat timeout; answered, it is kept.
final class AppLifecycleTests: XCTestCase {
    private func connectedClient(
        _ server: DDPTestServer, clock: ManualScheduler
    ) async throws -> DDPClient {
        var configuration = DDPClient.Configuration()
        configuration.scheduler = clock
        configuration.heartbeatInterval = .seconds(10)
        configuration.heartbeatTimeout = .seconds(15)
        let client = DDPClient(url: server.url, configuration: configuration)
        client.connect()
        try await client.waitUntilConnected()
        return client
    }

    func testADeadSocketIsReplacedAtOnceWhenTheAppComesBack() async throws {
        let server = DDPTestServer()
        try await server.start()
        defer { Task { try await server.stop() } }
        let clock = ManualScheduler(start: Date())
        let client = try await connectedClient(server, clock: clock)
        defer { client.close() }
        let accepted = server.acceptedConnections
        server.respondsToPings = false
        client.didEnterBackground()
        // Suspended for a minute: the socket heard nothing (the heartbeat's own ping is not answered either).
        clock.advance(by: .seconds(11))
        client.waitUntilIdle()
        let statuses = client.statusUpdates
        client.willEnterForeground()
        client.waitUntilIdle()
        clock.advance(by: .seconds(2))
        client.waitUntilIdle()
        let lost = try await client.waitForStatus("the socket replaced", from: statuses) { $0.state == .waiting }
        XCTAssertEqual(lost.reason?.code, .heartbeatTimedOut, "2 s after coming back, not the heartbeat's 15 s")
        clock.advance(by: .seconds(1))
        _ = try await client.waitForStatus("connected again", from: statuses) { $0.state == .connected }
        XCTAssertGreaterThan(server.acceptedConnections, accepted, "a new socket")
    }

    func testAnAnsweringSocketIsKept() async throws {
        let server = DDPTestServer()
        try await server.start()
        defer { Task { try await server.stop() } }
        server.method("noop") { _ in .null }
        let clock = ManualScheduler(start: Date())
        let client = try await connectedClient(server, clock: clock)
        defer { client.close() }
        let accepted = server.acceptedConnections
        client.didEnterBackground()
        // Suspended: nothing heard (the heartbeat's ping goes unanswered), then the server answers again.
        server.respondsToPings = false
        clock.advance(by: .seconds(11))
        client.waitUntilIdle()
        server.respondsToPings = true
        client.willEnterForeground()
        // The ping goes before this call, its pong comes before the call's answer: handled when the call completes.
        _ = try await withTimeout(10, "a round trip") { try await client.call("noop") }
        let pings = server.receivedMessages.count { if case .ping = $0 { true } else { false } }
        XCTAssertEqual(pings, 2, "the heartbeat's and the one on coming back")
        clock.advance(by: .seconds(2))
        client.waitUntilIdle()
        XCTAssertEqual(server.acceptedConnections, accepted, "kept: it answered")
        XCTAssertEqual(client.status.state, .connected)
    }
}
