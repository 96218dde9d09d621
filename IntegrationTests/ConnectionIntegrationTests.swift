import DDPTestServer
import EJSON
import Foundation
@_spi(Testing) import MeteorDDP
import NIOSSL
import XCTest

/// The client against DDPTestServer over real WebSockets on 127.0.0.1.
final class ConnectionIntegrationTests: XCTestCase {
    private func startServer(_ configure: (inout DDPTestServer.Configuration) -> Void = { _ in }) async throws
        -> DDPTestServer
    {
        var configuration = DDPTestServer.Configuration()
        configure(&configuration)
        let server = DDPTestServer(configuration: configuration)
        try await server.start()
        return server
    }

    private func fastRetry() -> DDPClient.Configuration {
        var configuration = DDPClient.Configuration()
        configuration.retryStrategy = RetryStrategy(
            baseTimeout: 20, exponent: 2, maxTimeout: 200, minTimeout: 10, minCount: 2, fuzz: 0.5)
        return configuration
    }

    func testConnectsAndEstablishesADDPSession() async throws {
        let server = try await startServer()
        let client = DDPClient(url: server.url)
        client.connect()
        try await client.waitUntilConnected()
        XCTAssertEqual(client.negotiatedVersion, .v1)
        XCTAssertEqual(
            server.receivedMessages.first, .connect(session: nil, version: .v1, support: DDPVersion.supported))
        client.close()
        try await server.stop()
    }

    func testConnectsToTheWebAddressAsDDPConnectTakesIt() async throws {
        // The server accepts WebSockets at /websocket only: http://127.0.0.1:<port> must become …/websocket.
        let server = try await startServer()
        let client = DDPClient(url: URL(string: "http://127.0.0.1:\(server.port)")!)
        client.connect()
        try await client.waitUntilConnected()
        client.close()
        try await server.stop()
    }

    func testAnUpgradeRefusedWithAnHTTPErrorFailsAtOnceNamingTheStatusAndTheFix() async throws {
        // ws:// URLs are used as typed: this one lacks /websocket, and the server answers 404.
        let server = try await startServer()
        var configuration = DDPClient.Configuration()
        configuration.connectTimeout = .seconds(600) // failing within waitForStatus's 10 s is not the timeout's doing
        let client = DDPClient(url: URL(string: "ws://127.0.0.1:\(server.port)/")!, configuration: configuration)
        client.connect()
        let status = try await client.waitForStatus("failed") { $0.state == .failed }
        XCTAssertEqual(status.reason?.transportError?.kind, .upgradeRefused(status: 404))
        let message = status.reason?.transportError?.message ?? ""
        XCTAssertTrue(message.contains("HTTP 404 Not Found") && message.contains("/websocket"), message)
        XCTAssertEqual(status.retryCount, 0, "not retried: the URL will not get better")
        client.close()
        try await server.stop()
    }

    func testNegotiatesDownToAVersionTheServerPrefers() async throws {
        let server = try await startServer { $0.supportedVersions = ["pre1"] }
        let client = DDPClient(url: server.url)
        client.connect()
        try await client.waitUntilConnected()
        XCTAssertEqual(client.negotiatedVersion, .pre1)
        XCTAssertEqual(server.acceptedConnections, 2, "failed, then a second connection proposing pre1")
        XCTAssertEqual(
            server.receivedMessages.last, .connect(session: nil, version: .pre1, support: DDPVersion.supported))
        client.close()
        try await server.stop()
    }

    func testFailsForGoodWhenTheServerSpeaksNoSupportedVersion() async throws {
        let server = try await startServer { $0.supportedVersions = ["2"] }
        let client = DDPClient(url: server.url)
        client.connect()
        let status = try await client.waitForStatus("failed") { $0.state == .failed }
        XCTAssertEqual(status.reason?.message, "DDP version negotiation failed; server requested version 2")
        XCTAssertEqual(server.acceptedConnections, 1)
        client.close()
        try await server.stop()
    }

    func testHeartbeatTimeoutDropsTheConnectionAndReconnects() async throws {
        let server = try await startServer { $0.heartbeatInterval = nil }
        server.respondsToPings = false
        var configuration = fastRetry()
        configuration.heartbeatInterval = .milliseconds(100)
        configuration.heartbeatTimeout = .milliseconds(100)
        let client = DDPClient(url: server.url, configuration: configuration)
        client.connect()
        try await client.waitUntilConnected()
        let lost = try await client.waitForStatus("heartbeat timeout") { $0.state == .waiting }
        XCTAssertEqual(lost.reason?.code, .heartbeatTimedOut)
        // The server records the ping on its own queue, which may lag the client's timeout: waited for, not read.
        _ = try await withTimeout(10, "the client's ping") { await server.waitForMessage { $0 == .ping(id: nil) } }
        server.respondsToPings = true
        try await client.waitUntilConnected()
        client.close()
        try await server.stop()
    }

    func testServerRestartReconnectsWithBackOffAndTheOldSession() async throws {
        let server = try await startServer()
        let client = DDPClient(url: server.url, configuration: fastRetry())
        client.connect()
        try await client.waitUntilConnected()
        let log = StatusLog()
        // Taken before the stop, so the log starts at `connected` however soon the client sees the loss.
        let updates = client.statusUpdates
        try await server.stop()
        let waiting = try await client.waitForStatus("waiting", seen: log, from: updates) {
            $0.state == .waiting && $0.retryCount >= 2
        }
        XCTAssertNotNil(waiting.retryTime)
        XCTAssertEqual(waiting.reason?.code, .connectionLost)
        try await server.start()
        try await client.waitForStatus("reconnected", seen: log) { $0.isConnected }
        XCTAssertEqual(Array(log.states.prefix(3)), [.connected, .waiting, .connecting])
        XCTAssertEqual(log.states.last, .connected)
        let connects = server.receivedMessages.filter { if case .connect = $0 { true } else { false } }
        guard case .connect(let session?, _, _, _) = connects.last else {
            return XCTFail("reconnect carried no session: \(connects)")
        }
        XCTAssertEqual(session.count, 17)
        client.close()
        try await server.stop()
    }

    func testRefusedConnectionsAreRetriedUntilTheServerAcceptsAgain() async throws {
        let server = try await startServer()
        server.refusesNewConnections = true
        let client = DDPClient(url: server.url, configuration: fastRetry())
        client.connect()
        try await client.waitForStatus("retrying") { $0.state == .waiting && $0.retryCount >= 1 }
        server.refusesNewConnections = false
        try await client.waitUntilConnected()
        client.close()
        try await server.stop()
    }

    func testDisconnectStopsRetrying() async throws {
        let server = try await startServer()
        // Timers on a manual clock: the only way the client could connect again is a timer, so running every timer
        // there is (an hour of back-off) shows none reconnects, without waiting in real time.
        let scheduler = ManualScheduler()
        var configuration = fastRetry()
        configuration.scheduler = scheduler
        let client = DDPClient(url: server.url, configuration: configuration)
        client.connect()
        try await client.waitUntilConnected()
        client.disconnect()
        try await client.waitForStatus("offline") { $0.state == .offline }
        let accepted = server.acceptedConnections
        client.waitUntilIdle()
        XCTAssertEqual(scheduler.pendingDelays, [], "no retry armed")
        scheduler.advance(by: .seconds(3600))
        client.waitUntilIdle()
        XCTAssertEqual(server.acceptedConnections, accepted)
        XCTAssertEqual(client.status.state, .offline)
        client.close()
        try await server.stop()
    }

    func testMalformedServerFrameIsReportedAndTheConnectionSurvives() async throws {
        let server = try await startServer()
        let client = DDPClient(url: server.url)
        let errors = client.errors
        client.connect()
        try await client.waitUntilConnected()
        server.broadcastRawFrame("not json")
        let error = try await withTimeout(10, "error report") {
            for await error in errors { return error }
            throw TimedOut(what: "errors ended")
        }
        XCTAssertEqual(error.code, .protocolViolation)
        server.broadcast(.ping(id: "still-alive"))
        try await withTimeout(10, "pong") { await server.waitForMessage { $0 == .pong(id: "still-alive") } }
        XCTAssertTrue(client.status.isConnected)
        client.close()
        try await server.stop()
    }

    func testMessagesFarLargerThan16KiBArriveIntact() async throws {
        let server = try await startServer()
        let client = DDPClient(url: server.url)
        client.connect()
        try await client.waitUntilConnected()
        let bigID = String(repeating: "x", count: 1 << 20)
        server.broadcast(.ping(id: bigID))
        try await withTimeout(20, "pong with a 1 MiB id") { await server.waitForMessage { $0 == .pong(id: bigID) } }
        client.close()
        try await server.stop()
    }

    func testPermessageDeflateCompressesBothWaysWhenTheServerAcceptsIt() async throws {
        let server = try await startServer { $0.permessageDeflate = true }
        server.publishBenchDocuments(count: 500)
        let client = DDPClient(url: server.url) // compression is on by default
        client.connect()
        try await client.waitUntilConnected()
        _ = client.collection(BenchDocuments.collection)
        try await withTimeout(20, "ready") { try await client.subscribe("bench").ready() }
        XCTAssertEqual(client.database.collection(BenchDocuments.collection).count, 500)
        XCTAssertEqual(
            client.database.collection(BenchDocuments.collection).document(id: BenchDocuments.id(7))?.fields,
            server.perform { server.collection(BenchDocuments.collection).document(BenchDocuments.id(7)) })
        let bigID = String(repeating: "x", count: 1 << 20)
        server.broadcast(.ping(id: bigID))
        try await withTimeout(20, "pong with a 1 MiB id") { await server.waitForMessage { $0 == .pong(id: bigID) } }
        let statistics = server.perMessageDeflateStatistics
        XCTAssertEqual(statistics.connections, 1)
        XCTAssertGreaterThanOrEqual(statistics.messagesDeflated, 501, "every document and the big ping sent compressed")
        XCTAssertGreaterThanOrEqual(statistics.messagesInflated, 1, "the big pong arrived compressed")
        client.close()
        try await server.stop()
    }

    func testPermessageDeflateIsNotUsedWhenTheClientDoesNotOfferIt() async throws {
        let server = try await startServer { $0.permessageDeflate = true }
        var webSocket = WebSocketTransport.Configuration()
        webSocket.compression = false
        let client = DDPClient(url: server.url, webSocket: webSocket)
        client.connect()
        try await client.waitUntilConnected()
        let bigID = String(repeating: "y", count: 4096)
        server.broadcast(.ping(id: bigID))
        try await withTimeout(20, "pong") { await server.waitForMessage { $0 == .pong(id: bigID) } }
        let statistics = server.perMessageDeflateStatistics
        XCTAssertEqual([statistics.connections, statistics.messagesDeflated, statistics.messagesInflated], [0, 0, 0])
        client.close()
        try await server.stop()
    }

    func testSecureWebSocketWithAnExplicitlyTrustedSelfSignedCertificate() async throws {
        let tls = try TestTLS.serverConfiguration()
        let server = try await startServer { $0.tls = tls }
        var webSocket = WebSocketTransport.Configuration()
        webSocket.trustRoots = .certificates([try TestTLS.certificate()])
        webSocket.tlsServerName = "localhost"
        let client = DDPClient(url: server.url, webSocket: webSocket)
        client.connect()
        try await client.waitUntilConnected()
        XCTAssertTrue(server.url.absoluteString.hasPrefix("wss://127.0.0.1:"))
        client.close()
        try await server.stop()
    }

    func testSecureWebSocketRejectsASelfSignedCertificateByDefault() async throws {
        let tls = try TestTLS.serverConfiguration()
        let server = try await startServer { $0.tls = tls }
        var webSocket = WebSocketTransport.Configuration()
        webSocket.tlsServerName = "localhost"
        let client = DDPClient(url: server.url, webSocket: webSocket)
        client.connect()
        let status = try await client.waitForStatus("TLS failure") { $0.state == .waiting }
        XCTAssertEqual(status.reason?.transportError?.kind, .tlsFailed, "\(String(describing: status.reason))")
        XCTAssertEqual(server.sessionCount, 0)
        client.close()
        try await server.stop()
    }

    func testSecureWebSocketToAnIPLiteralWithoutServerNameSaysWhy() async throws {
        let tls = try TestTLS.serverConfiguration()
        let server = try await startServer { $0.tls = tls }
        let client = DDPClient(url: server.url)
        client.connect()
        let status = try await client.waitForStatus("invalid URL") { $0.state == .waiting }
        XCTAssertEqual(status.reason?.transportError?.kind, .invalidURL)
        XCTAssertTrue(status.reason?.message.contains("tlsServerName") ?? false)
        client.close()
        try await server.stop()
    }

    func testANonWebSocketURLSaysWhy() async throws {
        let client = DDPClient(url: URL(string: "ftp://127.0.0.1:1/websocket")!)
        client.connect()
        let status = try await client.waitForStatus("invalid URL") { $0.state == .waiting }
        XCTAssertEqual(status.reason?.transportError?.kind, .invalidURL)
        XCTAssertEqual(status.reason?.transportError?.message, "not a ws:// or wss:// URL: ftp://127.0.0.1:1/websocket")
        client.close()
    }
}
