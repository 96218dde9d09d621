import DDPTestServer
import EJSON
import Foundation
import MeteorDDP
import XCTest

/// Subscriptions, methods with stubs, and accounts against DDPTestServer over real WebSockets.
final class SessionIntegrationTests: XCTestCase {
    private var server: DDPTestServer!

    override func setUp() async throws {
        server = DDPTestServer()
        try await server.start()
        server.publish("players") { _ in [Cursor(collection: "players")] }
        server.publish("secret") { _ in throw MeteorError(error: .number(403), reason: "Access denied") }
        server.publish("myPlayers") { context in
            guard let user = context.userID else { return [] }
            return [Cursor(collection: "players") { _, fields in fields["owner"]?.stringValue == user }]
        }
        server.method("noop") { _ in nil }
        server.method("whoAmI") { context in context.userID.map(EJSONValue.string) }
        server.method("addPlayer") { context in
            let id = context.randomID(forSequence: "/collection/players")
            try context.collection("players").insert(["name": context.params.first ?? .null, "score": 0], id: id)
            return .string(id)
        }
    }

    override func tearDown() async throws {
        try await server.stop()
    }

    private func connectedClient(_ configure: (inout DDPClient.Configuration) -> Void = { _ in }) async throws
        -> DDPClient
    {
        var configuration = DDPClient.Configuration()
        configuration.retryStrategy = RetryStrategy(baseTimeout: 20, exponent: 2, maxTimeout: 200)
        configure(&configuration)
        let client = DDPClient(url: server.url, configuration: configuration)
        client.connect()
        try await client.waitUntilConnected()
        return client
    }

    func testTenThousandDocumentsArriveBeforeReady() async throws {
        server.perform {
            let players = server.collection("players")
            for i in 0..<10_000 { try! players.insert(["n": .number(Double(i))], id: "p\(i)") }
        }
        let client = try await connectedClient()
        let sub = client.subscribe("players")
        try await withTimeout(60, "ready") { try await sub.ready() }
        XCTAssertEqual(client.database.collection("players").count, 10_000)
        XCTAssertEqual(client.database.collection("players").document(id: "p9999")?["n"], 9999)
        client.close()
    }

    func testSubscriptionsAreSharedAndUnsubscribedAfterTheirTimeout() async throws {
        let client = try await connectedClient()
        let a = client.subscribe("players", notInUseTimeout: .milliseconds(50))
        let b = client.subscribe("players", notInUseTimeout: .milliseconds(50))
        try await withTimeout(10, "ready") { try await a.ready() }
        XCTAssertEqual(a.id, b.id)
        a.stop()
        b.stop()
        let server = self.server!
        let unsub = try await withTimeout(10, "unsub") {
            await server.waitForMessage { if case .unsub = $0 { true } else { false } }
        }
        XCTAssertEqual(unsub, .unsub(id: a.id))
        XCTAssertEqual(server.receivedMessages.filter { if case .sub = $0 { true } else { false } }.count, 1)
        client.close()
    }

    func testAFailingPublicationSurfacesMeteorsError() async throws {
        let client = try await connectedClient()
        let sub = client.subscribe("secret")
        do {
            try await withTimeout(10, "nosub") { try await sub.ready() }
            XCTFail("must fail")
        } catch let error as MeteorError {
            XCTAssertEqual(error.error, 403)
            XCTAssertEqual(error.reason, "Access denied")
        }
        client.close()
    }

    func testAStubInsertMakesTheSameIDAsTheServerAndCompletesOnce() async throws {
        let client = try await connectedClient()
        let sub = client.subscribe("players")
        try await withTimeout(10, "ready") { try await sub.ready() }
        let localID = Locked<String?>(nil)
        client.defineStub("addPlayer") { context in
            let id = try context.collection("players").insert(["name": context.params.first ?? .null, "score": 0])
            localID.mutate { $0 = id }
            return id.map { .string($0) }
        }
        let completions = Locked(0)
        let result = try await withTimeout(10, "call") {
            let value = try await client.call("addPlayer", params: ["Grace"])
            completions.mutate { $0 += 1 }
            return value
        }
        XCTAssertEqual(result?.stringValue, localID.value)
        XCTAssertEqual(completions.value, 1)
        XCTAssertNotNil(client.database.collection("players").document(id: localID.value ?? ""))
        let serverIDs = server.perform { server.collection("players").find().map(\.id) }
        XCTAssertEqual(serverIDs, [localID.value].compactMap { $0 })
        client.close()
    }

    func testCollectionWritesGoThroughTheBuiltInMethodsAndConverge() async throws {
        let client = try await connectedClient()
        let sub = client.subscribe("players")
        try await withTimeout(10, "ready") { try await sub.ready() }
        let players = client.collection("players")
        let id = try await withTimeout(10, "insert") { try await players.insert(["name": "Ada", "score": 1]) }
        let changed = try await withTimeout(10, "update") { try await players.update(id, ["$inc": ["score": 2]]) }
        XCTAssertEqual(changed, 1)
        XCTAssertEqual(players.document(id: id)?["score"], 3)
        XCTAssertEqual(server.perform { server.collection("players").document(id)?["score"] }, 3)
        let removed = try await withTimeout(10, "remove") { try await players.remove(id) }
        XCTAssertEqual(removed, 1)
        XCTAssertNil(players.document(id: id))
        client.close()
    }

    func testServerRestartRevivesSubscriptionsWithoutSpuriousChangeNotifications() async throws {
        server.perform {
            let players = server.collection("players")
            for i in 0..<100 { try! players.insert(["n": .number(Double(i))], id: "p\(i)") }
        }
        let client = try await connectedClient()
        let sub = client.subscribe("players")
        try await withTimeout(10, "ready") { try await sub.ready() }
        let notifications = NotificationCounter(database: client.database)
        try await server.stop()
        try await client.waitForStatus("waiting") { $0.state == .waiting }
        try await server.start()
        try await client.waitUntilConnected()
        // A call sent after the reconnect completes only once its data is visible, which is after the revived
        // subscription's documents were applied (same socket, in order): then every notification has been posted.
        _ = try await withTimeout(10, "noop") { try await client.call("noop") }
        client.database.notificationQueue.sync {}
        client.database.observerQueue.sync {}
        XCTAssertEqual(notifications.count, 0, "unchanged data after a reconnect posts nothing")
        XCTAssertEqual(sub.status, .ready)
        XCTAssertEqual(client.database.collection("players").count, 100)
        client.close()
    }

    func testLoginWrongPasswordAndLogoutAgainstTheServer() async throws {
        server.createUser(username: "ada", email: "ada@example.com", password: "correct horse")
        let client = try await connectedClient()
        do {
            _ = try await withTimeout(10, "wrong password") {
                try await client.login(email: "ada@example.com", password: "wrong")
            }
            XCTFail("must fail")
        } catch let error as MeteorError {
            XCTAssertEqual(error.error, 403)
        }
        let account = try await withTimeout(10, "login") {
            try await client.login(email: "ada@example.com", password: "correct horse")
        }
        XCTAssertEqual(client.database.collection("users").document(id: account.userID)?["username"], "ada")
        XCTAssertEqual(server.loginTokenCount, 1)
        try await withTimeout(10, "logout") { try await client.logout() }
        XCTAssertNil(client.account)
        XCTAssertEqual(server.loginTokenCount, 0, "logout invalidates the token")
        client.close()
    }

    func testServerRestartResumesTheLoginFirstThenResendsPendingCalls() async throws {
        let userID = server.createUser(username: "ada", password: "pw")
        server.perform { try! server.collection("players").insert(["owner": .string(userID)], id: "mine") }
        let client = try await connectedClient()
        try await withTimeout(10, "login") { _ = try await client.login(username: "ada", password: "pw") }
        let mine = client.subscribe("myPlayers")
        try await withTimeout(10, "ready") { try await mine.ready() }
        XCTAssertNotNil(client.database.collection("players").document(id: "mine"))
        try await server.stop()
        try await client.waitForStatus("waiting") { $0.state == .waiting }
        let pending = Task { try await client.call("addPlayer", params: ["after restart"]) }
        try await server.start()
        _ = try await withTimeout(10, "pending call") { try await pending.value }
        let methods = server.receivedMessages.compactMap { message -> String? in
            if case .method(_, let name, let params, _) = message {
                return name == "login" ? (params.first?["resume"] != nil ? "resume" : "login") : name
            }
            return nil
        }
        XCTAssertEqual(methods, ["login", "resume", "addPlayer"])
        XCTAssertEqual(client.account?.userID, userID)
        XCTAssertNotNil(client.database.collection("players").document(id: "mine"), "never a logged-out cache")
        client.close()
    }

    func testARestartedClientResumesFromItsStoredToken() async throws {
        server.createUser(username: "ada", password: "pw")
        let store = InMemoryAccountStore()
        let first = try await connectedClient { $0.accountStore = store }
        let account = try await withTimeout(10, "login") { try await first.login(username: "ada", password: "pw") }
        first.close()
        let second = try await connectedClient { $0.accountStore = store }
        // The stored account is the second client's at once; what shows the resume is the server: a `login` with the
        // stored token arrives, and a method called next (held behind that login) runs as the user.
        XCTAssertEqual(second.account?.userID, account.userID)
        let token = account.token
        let server = self.server!
        _ = try await withTimeout(10, "resume login") {
            await server.waitForMessage { message in
                guard case .method(_, "login", let params, _) = message else { return false }
                return params.first?["resume"]?.stringValue == token
            }
        }
        let caller = try await withTimeout(10, "whoAmI") { try await second.call("whoAmI") }
        XCTAssertEqual(caller?.stringValue, account.userID)
        XCTAssertEqual(second.account?.userID, account.userID)
        second.close()
    }
}

final class NotificationCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var counted = 0
    private var observer: (any NSObjectProtocol)?

    init(database: Database) {
        database.notificationQueue.sync {}
        database.observerQueue.sync {}
        observer = NotificationCenter.default.addObserver(forName: .databaseDidChange, object: database, queue: nil) {
            [weak self] _ in
            self?.lock.withLock { self?.counted += 1 }
        }
    }

    deinit { if let observer { NotificationCenter.default.removeObserver(observer) } }

    var count: Int { lock.withLock { counted } }
}

/// The test server's merge box and login-driven re-runs, seen from the client.
final class PublicationIntegrationTests: XCTestCase {
    func testTwoPublicationsOfOneDocumentMergeFieldsAndClearOnStop() async throws {
        let server = DDPTestServer()
        try await server.start()
        server.perform {
            try! server.collection("players").insert(["name": "Ada", "score": 25, "secret": "x"], id: "ada")
        }
        server.publish("names") { context in
            context.added("players", id: "ada", fields: ["name": "Ada"])
            context.ready()
            return []
        }
        server.publish("scores") { context in
            context.added("players", id: "ada", fields: ["score": 25])
            context.ready()
            return []
        }
        let client = DDPClient(url: server.url)
        client.connect()
        try await client.waitUntilConnected()
        let names = client.subscribe("names")
        let scores = client.subscribe("scores", notInUseTimeout: .zero)
        try await withTimeout(10, "ready") {
            try await names.ready()
            try await scores.ready()
        }
        XCTAssertEqual(
            client.database.collection("players").document(id: "ada").map { EJSONValue.object($0.fields) },
            ["name": "Ada", "score": 25])
        let added = server.receivedMessages.count
        scores.stop()
        _ = try await withTimeout(10, "unsub") {
            await server.waitForMessage { if case .unsub = $0 { true } else { false } }
        }
        _ = try await withTimeout(10, "sync") { try await client.call("/players/remove", params: [["_id": "nobody"]]) }
        XCTAssertGreaterThan(server.receivedMessages.count, added)
        XCTAssertEqual(
            client.database.collection("players").document(id: "ada").map { EJSONValue.object($0.fields) },
            ["name": "Ada"],
            "the score went with its publication; the document stays for the other one")
        client.close()
        try await server.stop()
    }

    func testLoggingInReRunsPublicationsForTheNewUser() async throws {
        let server = DDPTestServer()
        try await server.start()
        let ada = server.createUser(username: "ada", password: "pw")
        server.perform { try! server.collection("notes").insert(["owner": .string(ada), "text": "mine"], id: "n1") }
        server.publish("myNotes") { context in
            guard let user = context.userID else { return [] }
            return [Cursor(collection: "notes") { _, fields in fields["owner"]?.stringValue == user }]
        }
        let client = DDPClient(url: server.url)
        client.connect()
        try await client.waitUntilConnected()
        _ = client.subscribe("myNotes")
        XCTAssertNil(client.database.collection("notes").document(id: "n1"))
        _ = try await withTimeout(10, "login") { try await client.login(username: "ada", password: "pw") }
        XCTAssertEqual(
            client.database.collection("notes").document(id: "n1")?["text"], "mine", "visible once the login completes")
        try await withTimeout(10, "logout") { try await client.logout() }
        XCTAssertNil(client.database.collection("notes").document(id: "n1"), "gone once the logout completes")
        client.close()
        try await server.stop()
    }
}

/// Protection against oversized frames: the socket closes, the client survives and reconnects.
final class FrameLimitIntegrationTests: XCTestCase {
    func testAMessageOverTheLimitClosesTheSocketAndTheClientReconnects() async throws {
        let server = DDPTestServer()
        try await server.start()
        var webSocket = WebSocketTransport.Configuration()
        webSocket.maxFrameSize = 4096
        webSocket.maxMessageSize = 4096
        webSocket.compression = false
        var configuration = DDPClient.Configuration()
        configuration.retryStrategy = RetryStrategy(baseTimeout: 20, exponent: 2, maxTimeout: 200)
        let client = DDPClient(url: server.url, configuration: configuration, webSocket: webSocket)
        client.connect()
        try await client.waitUntilConnected()
        // Taken before the frame goes out: the client may drop and reconnect before a stream taken later starts.
        let updates = client.statusUpdates
        server.broadcast(.ping(id: String(repeating: "x", count: 10_000)))
        try await client.waitForStatus("dropped", from: updates) { $0.state != .connected }
        try await client.waitUntilConnected()
        XCTAssertEqual(server.acceptedConnections, 2)
        client.close()
        try await server.stop()
    }
}
