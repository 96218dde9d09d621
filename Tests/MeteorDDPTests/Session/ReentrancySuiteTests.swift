import EJSON
import Foundation
import XCTest

@testable import MeteorDDP

/// From inside every kind of callback, every public client API may be called: nothing traps, nothing deadlocks, and
/// the client still works afterwards, also after `close()`.
final class ReentrancySuiteTests: XCTestCase {
    /// Calls every public API of the client (the ones that wait for the server are started in tasks that the test
    /// cancels). Connection-changing calls are limited to `reconnect()`, which does nothing while connected.
    static func exerciseEveryAPI(_ client: DDPClient, tasks: Locked<[Task<Void, Never>]>) {
        _ = client.status
        _ = client.negotiatedVersion
        _ = client.account
        _ = client.loggingIn
        _ = client.statusUpdates
        _ = client.errors
        _ = client.accountUpdates
        let sub = client.subscribe("reentrant", notInUseTimeout: .zero)
        _ = sub.status
        sub.whenReady { _ in client.subscribe("reentrantAgain", notInUseTimeout: .zero).stop() }
        sub.stop()
        _ = try? client.call("reentrant") { _ in }
        client.defineStub("reentrantStub") { context in
            _ = try? context.collection("reentrant").upsert(["n": 9], ["$set": ["m": 1]])
            return .string("stubbed")
        }
        _ = try? client.call("reentrantStub", options: MethodOptions(returnStubValue: true)) { _ in }
        var deadline = MethodOptions()
        deadline.timeout = .milliseconds(1)
        _ = try? client.call("reentrantWithDeadline", options: deadline) { _ in }
        let collection = client.collection("reentrant")
        _ = collection.documents
        _ = collection.count
        _ = collection.find(Query())
        _ = try? collection.insert(["n": 1])
        let collated = FindOptions(sort: ["n": 1], collation: Collation(locale: "en", strength: 2))
        _ = try? collection.find([:], collated)
        _ = try? collection.count(["n": 1], collated)
        try? collection.observe([:], collated).stop()
        let live = collection.observe()
        live.onChange { _ in }
        live.stop()
        _ = client.database.snapshot.documentCount(in: "reentrant")
        client.onReconnect("reentrant") {}
        client.reconnect()
        client.networkDidBecomeReachable()
        client.didEnterBackground()
        client.willEnterForeground()
        let started: [Task<Void, Never>] = [
            Task { _ = try? await client.call("reentrantAsync") },
            Task { _ = try? await client.login(username: "ada", password: "secret") },
            Task { try? await client.logout() },
            Task { try? await client.subscribe("reentrantReady").ready() },
            Task { try? await client.subscribe("reentrantReadyInTime").ready(timeout: .milliseconds(1)) },
            Task { try? await client.waitForPendingWrites() },
            Task { _ = try? await client.collection("reentrant").insert(["n": 2]) },
            Task { _ = try? await client.collection("reentrant").upsert("reentrantUpsert", ["$set": ["n": 3]]) },
            Task { _ = await client.diagnostics() }
        ]
        tasks.mutate { $0.append(contentsOf: started) }
    }

    func testEveryCallbackMayCallEveryPublicAPI() async throws {
        let harness = ClientHarness()
        let client = harness.client
        let tasks = Locked<[Task<Void, Never>]>([])
        let exercised = Locked<Set<String>>([])
        let expected: Set<String> = [
            "statusUpdates", "errors", "accountUpdates", "statusNotification", "databaseNotification", "whenReady",
            "completion", "onResultReceived", "stub", "onReconnect", "changes", "onChange", "snapshots"
        ]
        let all = expectation(description: "every callback kind called every API")
        let exercise: @Sendable (String) -> Void = { kind in
            guard !exercised.value.contains(kind) else { return }
            Self.exerciseEveryAPI(client, tasks: tasks)
            var complete = false
            exercised.mutate {
                let isNew = $0.insert(kind).inserted
                complete = isNew && $0 == expected
            }
            if complete { all.fulfill() }
        }

        // Streams and observers, registered before anything happens.
        let statusUpdates = client.statusUpdates
        let errors = client.errors
        let accountUpdates = client.accountUpdates
        let changes = client.database.changes
        let consumers = [
            Task {
                for await status in statusUpdates where status.isConnected {
                    exercise("statusUpdates")
                    break
                }
            },
            Task {
                for await _ in errors {
                    exercise("errors")
                    break
                }
            },
            Task {
                for await _ in accountUpdates {
                    exercise("accountUpdates")
                    break
                }
            },
            Task {
                for await _ in changes {
                    exercise("changes")
                    break
                }
            }
        ]
        let statusObserver = NotificationCenter.default.addObserver(
            forName: .ddpClientStatusDidChange, object: client, queue: nil
        ) { _ in
            exercise("statusNotification")
        }
        let databaseObserver = NotificationCenter.default.addObserver(
            forName: .databaseDidChange, object: client.database, queue: nil
        ) { _ in
            exercise("databaseNotification")
        }
        defer {
            NotificationCenter.default.removeObserver(statusObserver)
            NotificationCenter.default.removeObserver(databaseObserver)
        }
        let live = client.collection("players").observe()
        live.onChange { snapshot in if !snapshot.documents.isEmpty { exercise("onChange") } }
        let snapshots = live.snapshots
        // A snapshot consumer holds only the newest snapshot: it must see "lovelace" before the reconnect resets the
        // cache (the test server never sends it again).
        let sawLovelace = expectation(description: "the snapshots consumer saw lovelace")
        let snapshotConsumer = Task {
            for await snapshot in snapshots where !snapshot.documents.isEmpty {
                exercise("snapshots")
                sawLovelace.fulfill()
                break
            }
        }
        client.onReconnect("suite") { exercise("onReconnect") }
        client.defineStub("stubbed") { _ in
            exercise("stub")
            return nil
        }

        harness.establishConnection()
        let sub = client.subscribe("players")
        sub.whenReady { _ in exercise("whenReady") }
        var options = MethodOptions()
        options.onResultReceived = { _ in exercise("onResultReceived") }
        _ = try client.call("plain", options: options) { _ in exercise("completion") }
        _ = try client.call("stubbed") { _ in }
        harness.receive(frame: "not json") // an error for the errors stream
        harness.receive(.added(collection: "players", id: "lovelace", fields: ["score": 25]))
        harness.flushData()
        await fulfillment(of: [sawLovelace], timeout: 10)
        harness.dropAndReopen() // the reconnect hook
        harness.receive(.connected(session: "SESSION-2"))
        let transport = harness.transport
        // The server answers whatever the callbacks started, round after round (a login is a `wait` method: it goes
        // out once the methods before it are done): every method succeeds (logins with an account), every
        // subscription is ready.
        var answered: Set<String> = []
        var loginsAnswered = 0
        // Taken now: it keeps the newest 16 account changes from here on; changes alternate between an account and
        // none, so an answered login's account is among them.
        let accountChanges = client.accountUpdates
        for _ in 0..<20 {
            for message in harness.sent {
                switch message {
                case .method(let id, let name, _, _) where answered.insert(id).inserted:
                    let result: EJSONValue? = name == "login" ? ["id": "ada", "token": "token"] : nil
                    if name == "login" { loginsAnswered += 1 }
                    harness.receive(.result(id: id, result: result, error: nil))
                    harness.receive(.updated(methodIDs: [id]))
                case .sub(let id, _, _) where answered.insert(id).inserted:
                    harness.receive(.ready(subscriptionIDs: [id]))
                default:
                    break
                }
            }
            harness.flushData()
            client.callbackQueue.sync {}
            // Not the final account: the callbacks start logins and logouts alike, and which of them the client
            // queues last is not fixed. But one login at least has been answered (checked below: it logged in).
            if exercised.value == expected, loginsAnswered > 0 { break }
            // Tasks the callbacks started send more (a login once the methods before it are done): wait for it.
            let done = answered
            try await withTimeout(5, "more frames from the callbacks") {
                await transport.waitUntilSent { frames in
                    frames.contains { frame in
                        switch try? ClientMessage(ejson: EJSON.parse(frame)) {
                        case .method(let id, _, _, _)?, .sub(let id, _, _)?: !done.contains(id)
                        default: false
                        }
                    }
                }
            }
        }
        try await withTimeout(10, "an account from an answered login") {
            for await account in accountChanges where account != nil { return }
        }
        await fulfillment(of: [all], timeout: 10)
        XCTAssertEqual(exercised.value, expected)

        // The client still answers.
        harness.transport.clearSentFrames()
        harness.receive(frame: #"{"msg":"ping","id":"still"}"#)
        XCTAssertTrue(harness.transport.sentFrames.contains(#"{"msg":"pong","id":"still"}"#))

        // After close, every API is still safe, and everything waiting settles.
        client.close()
        Self.exerciseEveryAPI(client, tasks: tasks)
        for task in tasks.value { task.cancel() }
        for task in tasks.value { try await value(of: task, within: 5) }
        for consumer in consumers { consumer.cancel() }
        snapshotConsumer.cancel()
        live.stop()
    }
}

/// Inside the app's own `database.performUpdates`, on another thread than the client queue, every public API may be
/// called while the client queue's stubbed call waits for the transaction's write lock and server data waits to be
/// applied: nothing deadlocks (issue 47; `subscribe` did, 20 of 20 runs).
final class EveryAPIInsideATransactionTests: XCTestCase {
    func testEveryPublicAPIInsidePerformUpdatesWhileAStubWaitsForTheLockAndDataArrives() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let client = harness.client
        let players = client.subscribe("players")
        harness.settle()
        let tasks = Locked<[Task<Void, Never>]>([])
        defer { for task in tasks.value { task.cancel() } }
        for round in 0..<20 {
            // Server data keeps arriving meanwhile (it waits in the inbox for the client queue, then for the lock).
            harness.transport.receive(
                .added(collection: "players", id: "p\(round)", fields: ["round": .number(Double(round))]))
            try harness.insideATransactionWhileAStubWaitsForTheLock {
                ReentrancySuiteTests.exerciseEveryAPI(client, tasks: tasks)
            }
        }
        harness.flushData()
        XCTAssertNotNil(harness.document("players", "p19"), "the client still applies data")
        withExtendedLifetime(players) {}
    }

    private struct Player: Codable, Sendable { var n: Int? }
    private struct Team: Codable, Sendable { var playerId: String? }

    /// The APIs `exerciseEveryAPI` leaves out, inside the same interleaving: the connection's lifecycle (`disconnect`,
    /// `connect`, reachability, `close` last), the observable models, and relationships (find, observe, `link`). None
    /// may wait for the client queue while the caller holds the write lock.
    func testLifecycleObservationAndRelationshipAPIsInsidePerformUpdatesWhileAStubWaitsForTheLock() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let client = harness.client
        let players = client.collection("players", as: Player.self)
        let teams = client.collection("teams", as: Team.self)
        let observations = DispatchQueue(label: "observations")
        let kept = Locked<[AnyObject]>([])
        let tasks = Locked<[Task<Void, Never>]>([])
        defer { for task in tasks.value { task.cancel() } }
        try harness.insideATransactionWhileAStubWaitsForTheLock {
            client.disconnect()
            client.connect()
            client.networkDidBecomeUnreachable()
            client.networkDidBecomeReachable()
            client.didEnterBackground()
            client.willEnterForeground()
        }
        try harness.insideATransactionWhileAStubWaitsForTheLock {
            if #available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *) {
                let models: [AnyObject] = [
                    client.subscribe("players").observed(scheduler: .queue(observations)),
                    client.observedStatus(scheduler: .queue(observations)),
                    client.observedUser(as: Player.self, scheduler: .queue(observations)),
                    try! players.observed(scheduler: .queue(observations))
                ]
                kept.mutate { $0.append(contentsOf: models) }
            }
            let relationship = teams.toOne(players, idIn: "playerId")
            _ = try? relationship.find()
            let live = try! relationship.observe()
            kept.mutate { $0.append(live) }
            tasks.mutate { $0.append(Task { try? await relationship.link("team1", to: "p1") }) }
        }
        try harness.insideATransactionWhileAStubWaitsForTheLock {
            client.close()
        }
        XCTAssertEqual(client.status.state, .offline, "closed")
        withExtendedLifetime(kept.value) {}
    }
}
