import DDPTestServer
import EJSON
import Foundation
@_spi(Testing) import MeteorDDP
import NIOConcurrencyHelpers
import NIOPosix
import XCTest

/// Nothing of the client runs on an event-loop thread: what a frame or a transport event leads to runs on the client
/// queue, the socket's event loop only reads, decodes and hands over (issue 48). Over a real WebSocket to
/// DDPTestServer on loopback.
final class EventLoopTests: XCTestCase {
    /// An account store (app code: a protocol apps implement) that notes, for each save, whether it ran on an event
    /// loop.
    private final class RecordingAccountStore: AccountStore {
        private let state: NIOLockedValueBox<(account: Account?, saves: [(account: Account?, onEventLoop: Bool)])>
        private let saved: XCTestExpectation

        init(_ account: Account?, saved: XCTestExpectation) {
            state = NIOLockedValueBox((account, []))
            self.saved = saved
        }

        func load() throws -> Account? { state.withLockedValue { $0.account } }

        func save(_ account: Account?) throws {
            let onEventLoop = MultiThreadedEventLoopGroup.currentEventLoop != nil
            state.withLockedValue {
                $0.account = account
                $0.saves.append((account, onEventLoop))
            }
            saved.fulfill()
        }

        var saves: [(account: Account?, onEventLoop: Bool)] { state.withLockedValue { $0.saves } }
    }

    /// A stored account whose token comes to expire within the hour while the client waits to connect is logged out
    /// when the first socket opens, instead of resumed (Meteor's client does so too): the store is told in the
    /// socket's reset, which the `opened` event leads to. Before, an event something waited on was drained
    /// synchronously from the event loop, and the store's `save(nil)` ran on it.
    func testWhatTheSocketOpeningLeadsToRunsOffTheEventLoop() async throws {
        let server = DDPTestServer()
        try await server.start()
        let saved = expectation(description: "the expiring account was cleared from the store")
        let clock = ManualScheduler(start: Date())
        let store = RecordingAccountStore(
            Account(userID: "ada", token: "old", tokenExpires: clock.now.addingTimeInterval(2 * 3600)), saved: saved)
        var configuration = DDPClient.Configuration()
        configuration.accountStore = store
        configuration.scheduler = clock
        let client = DDPClient(url: server.url, configuration: configuration)
        XCTAssertEqual(client.account?.token, "old", "not expiring at start-up: restored")
        clock.advance(by: .seconds(3_700))
        client.connect()
        await fulfillment(of: [saved], timeout: 10)
        client.close()
        try await server.stop()
        XCTAssertEqual(store.saves.map { $0.account == nil }, [true], "logged out, once")
        XCTAssertEqual(store.saves.map(\.onEventLoop), [false], "the store was called off the event loop")
    }
    /// With ``PendingStubMode/rebase``, server data for a document a pending call's stub wrote replays that stub on
    /// the new server version. The replays come from frames handled with a `result` (a frame a caller waits on):
    /// before, those were drained synchronously from the event loop, and the app's stub ran on it.
    func testStubsReplayedAsServerDataArrivesRunOffTheEventLoop() async throws {
        let server = DDPTestServer()
        try await server.start()
        defer { Task { try await server.stop() } }
        server.publish("players") { _ in [Cursor(collection: "players")] }
        server.method("players.inc") { context in
            .number(Double(try context.collection("players").update("lovelace", ["$inc": ["score": 1]])))
        }
        server.perform { try! server.collection("players").insert(["score": 1], id: "lovelace") }
        var configuration = DDPClient.Configuration()
        configuration.pendingStubMode = .rebase
        let client = DDPClient(url: server.url, configuration: configuration)
        defer { client.close() }
        let runs = NIOLockedValueBox<[Bool]>([])
        let ran = expectation(description: "the three stubs ran")
        ran.expectedFulfillmentCount = 3
        ran.assertForOverFulfill = false
        client.defineStub("players.inc") { context in
            runs.withLockedValue { $0.append(MultiThreadedEventLoopGroup.currentEventLoop != nil) }
            ran.fulfill()
            return .number(Double(try context.collection("players").update("lovelace", ["$inc": ["score": 1]])))
        }
        client.connect()
        try await withTimeout(10, "ready") { try await client.subscribe("players").ready() }

        // Three calls held by the server: each answer's `changed` replays the stubs of the calls still pending.
        server.holdMethods(named: ["players.inc"])
        let awaited = Task { try await client.call("players.inc") }
        let handled = expectation(description: "the calls with handlers completed")
        handled.expectedFulfillmentCount = 2
        for _ in 0..<2 { _ = try client.call("players.inc") { _ in handled.fulfill() } }
        await fulfillment(of: [ran], timeout: 10)
        server.releaseHeldMethods()
        _ = try await withTimeout(10, "the awaited call") { try await awaited.value }
        await fulfillment(of: [handled], timeout: 10)
        XCTAssertEqual(
            client.database.document(DocumentKey(collectionName: "players", documentID: "lovelace"))?
                .fields["score"], 4)
        let onEventLoop = runs.withLockedValue { $0 }
        XCTAssertGreaterThan(onEventLoop.count, 3, "the stubs were replayed")
        XCTAssertEqual(onEventLoop.filter { $0 }.count, 0, "no stub ran on an event loop: \(onEventLoop)")
    }

    /// A server sending faster than the client applies: once the frames not handled yet reach their bound, the reader
    /// waits for the client queue to catch up. Before, the event-loop thread itself waited (a `sync` on the client
    /// queue), and every other socket of that loop with it; now the reading task is suspended and the loop runs on.
    func testABacklogAtItsBoundSuspendsTheReaderNotTheEventLoop() async throws {
        let server = DDPTestServer()
        try await server.start()
        defer { Task { try await server.stop() } }
        server.publish("items") { _ in [Cursor(collection: "items")] }
        server.method("noop") { _ in .null }
        // The shared group's loops (the socket is on one of them): a group of the test's own would have to outlive
        // the client's connection tasks.
        let loops = Array(MultiThreadedEventLoopGroup.singleton.makeIterator())
        let client = DDPClient(url: server.url)
        defer { client.close() }
        client.connect()
        try await withTimeout(10, "ready") { try await client.subscribe("items").ready() }

        let atBound = expectation(description: "the backlog reached its bound")
        atBound.assertForOverFulfill = false
        client.onBacklogBound { atBound.fulfill() }
        // A stub holds the client queue (stubs run on it): nothing is drained meanwhile.
        let release = DispatchSemaphore(value: 0)
        let blocking = expectation(description: "the stub holds the client queue")
        client.defineStub("noop") { _ in
            blocking.fulfill()
            _ = release.wait(timeout: .now() + 30)
            return .null
        }
        defer { release.signal() }
        DispatchQueue.global().async { _ = try? client.call("noop") { _ in } }
        await fulfillment(of: [blocking], timeout: 10)
        // More than the frames the client keeps before it stops reading (4,096).
        let count = 5_000
        server.perform {
            for i in 0..<count { _ = try! server.collection("items").insert(["n": .number(Double(i))], id: "i\(i)") }
        }
        await fulfillment(of: [atBound], timeout: 20)

        let served = expectation(description: "every event loop runs other work while the backlog waits")
        served.expectedFulfillmentCount = loops.count
        for loop in loops { loop.execute { served.fulfill() } }
        await fulfillment(of: [served], timeout: 5)

        release.signal()
        client.defineStub("noop") { _ in .null }
        _ = try await withTimeout(10, "a call behind the flood") { try await client.call("noop") }
        XCTAssertEqual(
            try client.database.collection("items").count([:]), count, "every document arrived, the client caught up")
    }
}
