import DDPTestServer
import EJSON
import Foundation
import MeteorDDP
import XCTest

/// A client and DDPTestServer resuming sessions as Meteor 3.5+ does (ddp-semantics §13): a blip within the grace
/// period costs no login, no subscription and no download again, and no call runs twice; a server that keeps no
/// session (before 3.5) gets the classic reconnect; `disconnect()` ends the session on the server at once.
final class SessionResumptionTests: XCTestCase {
    private var server: DDPTestServer!
    private var adaID: String?

    private func start(gracePeriod: Duration = .seconds(15)) async throws {
        var configuration = DDPTestServer.Configuration()
        configuration.disconnectGracePeriod = gracePeriod
        server = DDPTestServer(configuration: configuration)
        try await server.start()
        adaID = server.createUser(username: "ada", password: "secret")
        server.publish("items") { _ in [Cursor(collection: "items")] }
        server.method("slow") { _ in .string("done") }
        server.perform {
            for n in 0..<50 { _ = try! server.collection("items").insert(["n": .number(Double(n))], id: "item\(n)") }
        }
    }

    override func tearDown() async throws {
        try await server?.stop()
    }

    /// Logged in and subscribed to the 50 items.
    private func connectedClient() async throws -> (DDPClient, Subscription) {
        var configuration = DDPClient.Configuration()
        configuration.retryStrategy = RetryStrategy(baseTimeout: 10, exponent: 2, maxTimeout: 100, minTimeout: 10)
        let client = DDPClient(url: server.url, configuration: configuration)
        client.connect()
        try await client.waitUntilConnected()
        _ = try await client.login(username: "ada", password: "secret")
        let items = client.subscribe("items")
        try await withTimeout(10, "ready") { try await items.ready() }
        return (client, items)
    }

    private func messages(after count: Int) -> [String] {
        server.receivedMessages.dropFirst(count).map { message in
            if case .method(_, let name, _, _) = message { return "method \(name)" }
            return message.name
        }
    }

    private func waitForDocument(_ client: DDPClient, _ id: String) async throws {
        let live = client.database.collection("items").observe(try Query(["_id": .string(id)]))
        defer { live.stop() }
        try await withTimeout(10, "document \(id)") {
            for await snapshot in live.snapshots where !snapshot.documents.isEmpty { return }
        }
    }

    func testABlipWithinTheGracePeriodCostsNoLoginSubscriptionOrDownloadAgain() async throws {
        try await start()
        let (client, items) = try await connectedClient()
        defer { client.close() }
        let received = server.receivedMessages.count
        let statuses = client.statusUpdates
        server.severAllConnections()
        let status = try await client.waitForStatus("resumed", from: statuses) {
            $0.state == .connected && $0.sessionStart != .new
        }
        XCTAssertEqual(status.sessionStart, .resumed)
        XCTAssertEqual(server.connectOutcomes.last, .resumed)
        XCTAssertEqual(messages(after: received), ["connect"], "no login, no sub: nothing but the offer")
        XCTAssertEqual(client.account?.userID, adaID, "still logged in")
        XCTAssertEqual(items.status, .ready, "still ready: never revived")
        // The subscription carries on on the server.
        server.perform { _ = try! server.collection("items").insert(["n": 50], id: "late") }
        try await waitForDocument(client, "late")
        XCTAssertEqual(client.database.collection("items").documents.count, 51)
    }

    /// Meteor's own client sends a call in flight again on a resumed session, and the server runs it twice. This one
    /// does not: the call completes once, from the run the old socket asked for.
    func testACallInFlightAcrossAResumeRunsOnce() async throws {
        try await start()
        let (client, _) = try await connectedClient()
        defer { client.close() }
        server.holdMethods(named: ["slow"])
        let call = Task { try await client.call("slow") }
        _ = await server.waitForMessage { if case .method(_, "slow", _, _) = $0 { true } else { false } }
        let statuses = client.statusUpdates
        server.severAllConnections()
        let status = try await client.waitForStatus("resumed", from: statuses) {
            $0.state == .connected && $0.sessionStart != .new
        }
        XCTAssertEqual(status.sessionStart, .resumed)
        server.releaseHeldMethods()
        let result = try await withTimeout(10, "the call") { try await call.value }
        XCTAssertEqual(result, "done")
        let sent = server.receivedMessages.count { if case .method(_, "slow", _, _) = $0 { true } else { false } }
        XCTAssertEqual(sent, 1, "not sent again")
        XCTAssertEqual(server.callsRunMoreThanOnce, [])
    }

    /// A server that keeps no session (Meteor before 3.5, or a grace period that ran out): a new session, and the
    /// client logs in, subscribes and sends its call again, as it always did.
    func testAServerThatKeepsNoSessionGetsTheClassicReconnect() async throws {
        try await start(gracePeriod: .zero)
        let (client, items) = try await connectedClient()
        defer { client.close() }
        server.holdMethods(named: ["slow"])
        let call = Task { try await client.call("slow") }
        _ = await server.waitForMessage { if case .method(_, "slow", _, _) = $0 { true } else { false } }
        let received = server.receivedMessages.count
        let statuses = client.statusUpdates
        server.severAllConnections()
        let status = try await client.waitForStatus("reconnected", from: statuses) {
            $0.state == .connected && $0.sessionStart != .new
        }
        XCTAssertEqual(status.sessionStart, .resumeRefused)
        server.releaseHeldMethods()
        let result = try await withTimeout(10, "the call") { try await call.value }
        XCTAssertEqual(result, "done")
        try await withTimeout(10, "ready again") { try await items.ready() }
        let after = messages(after: received)
        XCTAssertEqual(after.first, "connect")
        XCTAssertTrue(after.contains("method login"), "\(after)")
        XCTAssertTrue(after.contains("sub"), "\(after)")
        XCTAssertTrue(after.contains("method slow"), "sent again on the new session: \(after)")
    }

    /// `disconnect()` says goodbye: the server ends the session with the socket, and the next connect starts anew.
    func testDisconnectEndsTheSessionOnTheServer() async throws {
        try await start()
        let (client, _) = try await connectedClient()
        defer { client.close() }
        client.disconnect()
        _ = await server.waitForMessage { $0 == .disconnect }
        await server.waitUntilNoSession()
        XCTAssertEqual(server.sessionsInGracePeriod, 0)
        let statuses = client.statusUpdates
        client.connect()
        let status = try await client.waitForStatus("connected", from: statuses) { $0.state == .connected }
        XCTAssertEqual(status.sessionStart, .new)
        XCTAssertEqual(server.connectOutcomes.last, .newSession)
    }
}
