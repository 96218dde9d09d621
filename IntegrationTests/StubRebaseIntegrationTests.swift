import DDPTestServer
import EJSON
import Foundation
import MeteorDDP
import NIOConcurrencyHelpers
import TestSupport
import XCTest

/// Two clients on DDPTestServer. A's increments are pending (the server holds them) while B paints the same player:
/// with ``PendingStubMode/rebase`` A shows B's change at once with its own increments on top, and never the server's
/// version without them; under Meteor's rule (the default) a third client shows its local version until `updated`.
/// Both end equal to the server.
final class StubRebaseIntegrationTests: XCTestCase {
    private var server: DDPTestServer!
    private let lovelace = DocumentKey(collectionName: "players", documentID: "lovelace")

    override func setUp() async throws {
        server = DDPTestServer()
        try await server.start()
        server.publish("players") { _ in [Cursor(collection: "players")] }
        server.method("players.inc") { context in
            .number(Double(try context.collection("players").update("lovelace", ["$inc": ["score": 1]])))
        }
        server.perform { try! server.collection("players").insert(["score": 25, "color": "blue"], id: "lovelace") }
    }

    override func tearDown() async throws {
        try await server.stop()
    }

    private func connectedClient(_ mode: PendingStubMode) async throws -> DDPClient {
        var configuration = DDPClient.Configuration()
        configuration.pendingStubMode = mode
        let client = DDPClient(url: server.url, configuration: configuration)
        client.connect()
        try await client.waitUntilConnected()
        client.defineStub("players.inc") { context in
            .number(Double(try context.collection("players").update("lovelace", ["$inc": ["score": 1]])))
        }
        let sub = client.subscribe("players")
        try await withTimeout(10, "ready") { try await sub.ready() }
        return client
    }

    /// Waits until the client shows lovelace as `expected`.
    private func waitUntil(_ client: DDPClient, shows expected: EJSONValue, _ what: String) async throws {
        let live = client.database.collection("players").observe(try Query(["_id": "lovelace"]))
        defer { live.stop() }
        try await withTimeout(10, what) {
            for await snapshot in live.snapshots where snapshot.documents.first.map({ .object($0.fields) }) == expected
            {
                return
            }
        }
    }

    func testAPendingIncrementStaysOnTopOfAnotherUsersChangeAndEndsEqualToTheServer() async throws {
        let a = try await connectedClient(.rebase)
        let b = try await connectedClient(.holdServerData)
        let meteor = try await connectedClient(.holdServerData)
        defer { for client in [a, b, meteor] { client.close() } }
        let shownByA = VersionsShown(a.database, lovelace)

        server.holdMethods(named: ["players.inc"])
        let calls = [a, a, meteor].map { client in Task { try await client.call("players.inc", params: []) } }
        try await waitUntil(a, shows: ["score": 27, "color": "blue"], "A's two stubs")
        try await waitUntil(meteor, shows: ["score": 26, "color": "blue"], "the Meteor client's stub")

        // B paints lovelace red; its call is answered (not held) and its data visible to B.
        _ = try await b.collection("players").update("lovelace", ["$set": ["color": "red"]])
        try await waitUntil(a, shows: ["score": 27, "color": "red"], "B's change under A's increments")
        // The Meteor client got the change too (gauss comes after it on the same socket) but keeps it aside.
        server.perform { try! server.collection("players").insert(["score": 1], id: "gauss") }
        let gauss = meteor.database.collection("players").observe(try Query(["_id": "gauss"]))
        try await withTimeout(10, "gauss") {
            for await snapshot in gauss.snapshots where snapshot.documents.count == 1 { return }
        }
        gauss.stop()
        XCTAssertEqual(
            meteor.database.document(lovelace).map { .object($0.fields) }, ["score": 26, "color": "blue"] as EJSONValue)

        server.releaseHeldMethods()
        for call in calls { _ = try await withTimeout(10, "the calls") { try await call.value } }
        let onServer: EJSONValue? = server.perform {
            server.collection("players").find().first { $0.id == "lovelace" }.map { .object($0.fields) }
        }
        XCTAssertEqual(onServer, ["score": 28, "color": "red"])
        for client in [a, b, meteor] {
            try await waitUntil(client, shows: onServer!, "the server's version")
        }
        // From the moment B's change showed, A never showed the server's version without its increments.
        let versions = shownByA.versions
        let firstRed = try XCTUnwrap(versions.firstIndex { $0["color"] == "red" })
        for version in versions[firstRed...] {
            XCTAssertGreaterThanOrEqual(version["score"]?.doubleValue ?? 0, 27, "\(versions)")
        }
    }
}

/// Every version of one document a database's notifications showed, in order.
private final class VersionsShown: @unchecked Sendable {
    // @unchecked because `observer` is set once, in init, and read in deinit.
    private let recorded = NIOLockedValueBox<[EJSONObject]>([])
    private var observer: (any NSObjectProtocol)?
    private let database: Database

    init(_ database: Database, _ key: DocumentKey) {
        self.database = database
        let recorded = recorded
        observer = NotificationCenter.default.addObserver(forName: .databaseDidChange, object: database, queue: nil) {
            notification in
            guard let changes = notification.userInfo?[DatabaseChanges.userInfoKey] as? DatabaseChanges,
                let after = changes.changeDetails(for: key)?.documentAfter
            else { return }
            recorded.withLockedValue { $0.append(after.fields) }
        }
    }

    deinit {
        if let observer { NotificationCenter.default.removeObserver(observer) }
    }

    var versions: [EJSONObject] {
        database.notificationQueue.sync {}
        database.observerQueue.sync {}
        return recorded.withLockedValue { $0 }
    }
}
