import DDPTestServer
import EJSON
import Foundation
import MeteorDDP
import TestSupport
import XCTest

/// Servers behind an authenticating proxy: extra headers on the WebSocket upgrade (an `Authorization`, a `Cookie`, a
/// `User-Agent`) reach the server and never appear in the client's logs; an HTTP `CONNECT` proxy carries the
/// connection. Against DDPTestServer on loopback.
final class UpgradeHeadersAndProxyTests: XCTestCase {
    private static let secret = "Bearer s3cret-upgrade-token"

    private func startServer() async throws -> DDPTestServer {
        var configuration = DDPTestServer.Configuration()
        configuration.requiredUpgradeHeaders = ["Authorization": Self.secret]
        let server = DDPTestServer(configuration: configuration)
        try await server.start()
        server.method("echo") { context in context.params.first ?? .null }
        return server
    }

    func testUpgradeHeadersReachTheServerAndNeverTheLogs() async throws {
        let server = try await startServer()
        defer { Task { try await server.stop() } }

        let refused = DDPClient(url: server.url)
        defer { refused.close() }
        refused.connect()
        let status = try await refused.waitForStatus("refused") { $0.state == .failed || $0.state == .waiting }
        guard case .upgradeRefused(let code)? = status.reason?.transportError?.kind else {
            return XCTFail("\(String(describing: status.reason))")
        }
        XCTAssertEqual(code, 401, "without the header, the proxy's answer")

        let recorder = LogRecorder()
        var configuration = DDPClient.Configuration()
        configuration.logger = recorder.logger
        var webSocket = WebSocketTransport.Configuration()
        webSocket.upgradeHeaders = ["Authorization": Self.secret, "User-Agent": "MeteorDDPTests/1.0"]
        let client = DDPClient(url: server.url, configuration: configuration, webSocket: webSocket)
        defer { client.close() }
        client.connect()
        let answer = try await withTimeout(10, "a call through") { try await client.call("echo", params: ["hi"]) }
        XCTAssertEqual(answer, "hi")
        let sent = try XCTUnwrap(server.upgradeRequestHeaders.last)
        XCTAssertTrue(sent.contains { $0.name.lowercased() == "user-agent" && $0.value == "MeteorDDPTests/1.0" })
        XCTAssertTrue(sent.contains { $0.name.lowercased() == "authorization" && $0.value == Self.secret })
        XCTAssertFalse(recorder.lines.isEmpty, "the client logged at trace")
        XCTAssertEqual(recorder.lines.filter { $0.contains("s3cret-upgrade-token") }, [], "no secret in the logs")
    }

    func testAnInvalidHeaderNameIsATypedError() async throws {
        let server = try await startServer()
        defer { Task { try await server.stop() } }
        var webSocket = WebSocketTransport.Configuration()
        webSocket.upgradeHeaders = ["Bad Name": "x"]
        let client = DDPClient(url: server.url, webSocket: webSocket)
        defer { client.close() }
        client.connect()
        let status = try await client.waitForStatus("failed attempt") { $0.reason != nil }
        XCTAssertEqual(status.reason?.transportError?.kind, .invalidURL, "\(String(describing: status.reason))")
    }

    func testAConnectionThroughAnHTTPConnectProxy() async throws {
        let server = try await startServer()
        defer { Task { try await server.stop() } }
        let proxy = try await HTTPConnectProxy()
        defer { Task { try await proxy.stop() } }
        var webSocket = WebSocketTransport.Configuration()
        webSocket.upgradeHeaders = ["Authorization": Self.secret]
        webSocket.proxy = .http(host: "127.0.0.1", port: proxy.port, headers: ["Proxy-Authorization": "Basic cHJveHk="])
        let client = DDPClient(url: server.url, webSocket: webSocket)
        defer { client.close() }
        client.connect()
        let answer = try await withTimeout(10, "a call through the proxy") {
            try await client.call("echo", params: ["proxied"])
        }
        XCTAssertEqual(answer, "proxied")
        let request = try XCTUnwrap(proxy.requests.first)
        XCTAssertEqual(request.target, "127.0.0.1:\(server.port)")
        XCTAssertEqual(request.headers["proxy-authorization"], "Basic cHJveHk=")
    }
}
