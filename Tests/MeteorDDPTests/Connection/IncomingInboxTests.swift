import EJSON
import XCTest

@_spi(Testing) @testable import MeteorDDP

/// The hand-over from the transport's thread to the client queue: data that nobody waits on is batched, anything else
/// is handled before the transport's thread goes on, and the backlog is bounded.
final class IncomingInboxTests: XCTestCase {
    private func data(_ id: String) -> IncomingInbox.Item {
        .message(.success(.message(.removed(collection: "c", id: id))), generation: 1)
    }

    private var ready: IncomingInbox.Item {
        .message(.success(.message(.ready(subscriptionIDs: ["s"]))), generation: 1)
    }

    private func names(_ items: [IncomingInbox.Item]) -> [String] {
        items.map { item in
            switch item {
            case .message(.success(.message(.removed(_, let id))), _): id
            case .message(.success(let message), _): message.name
            case .message(.failure, _): "violation"
            case .transport: "transport"
            }
        }
    }

    func testDataWaitsForOneDrainScheduledByItsFirstFrame() {
        let inbox = IncomingInbox()
        XCTAssertEqual(inbox.append(data("1"), waitedOn: false), .drainSoon)
        XCTAssertEqual(inbox.append(data("2"), waitedOn: false), .none)
        XCTAssertEqual(inbox.append(data("3"), waitedOn: false), .none)
        XCTAssertEqual(names(inbox.takeAll()), ["1", "2", "3"])
        // The drain ran: the next data frame schedules the next one.
        XCTAssertEqual(inbox.append(data("4"), waitedOn: false), .drainSoon)
    }

    /// A frame something waits on is handed over at once, with the data before it and whatever arrives until the
    /// client queue takes it: one hand-over per batch, and the transport's thread never waits for it.
    func testAFrameSomethingWaitsOnIsHandedOverNowWithTheDataBeforeAndAfterIt() {
        let inbox = IncomingInbox()
        XCTAssertEqual(inbox.append(data("1"), waitedOn: false), .drainSoon)
        XCTAssertEqual(inbox.append(ready, waitedOn: true), .handOver)
        XCTAssertEqual(inbox.append(ready, waitedOn: true), .none, "the hand-over on its way takes it too")
        XCTAssertEqual(inbox.append(data("2"), waitedOn: false), .none)
        XCTAssertEqual(names(inbox.takeAll()), ["1", "ready", "ready", "2"])
        XCTAssertEqual(inbox.append(ready, waitedOn: true), .handOver, "with nothing scheduled too")
    }

    func testTheBacklogOfAScheduledDrainIsBounded() {
        let inbox = IncomingInbox(backlogLimit: 3)
        XCTAssertEqual(inbox.append(data("1"), waitedOn: false), .drainSoon)
        XCTAssertEqual(inbox.append(data("2"), waitedOn: false), .none)
        XCTAssertEqual(inbox.append(data("3"), waitedOn: false), .drainNow, "the transport's thread catches up")
        XCTAssertEqual(names(inbox.takeAll()), ["1", "2", "3"])
    }

    /// A batch handed over at once may carry more than a hold keeps: the drain that starts the hold puts the rest
    /// back, and that reaches the limit (reported once, as an append would).
    func testItemsPutBackByTheDrainThatStartedAHoldReachItsLimit() {
        let inbox = IncomingInbox(holdLimit: 2)
        XCTAssertEqual(inbox.append(ready, waitedOn: true), .handOver)
        for id in ["1", "2", "3"] {
            XCTAssertEqual(inbox.append(data(id), waitedOn: false), id == "1" ? .drainSoon : .none)
        }
        let batch = inbox.takeAll()
        inbox.hold()
        XCTAssertTrue(inbox.putBack(batch[1...]), "three items held, two kept: the limit is reached")
        XCTAssertEqual(inbox.append(data("4"), waitedOn: false), .none, "reported once")
        inbox.release()
        XCTAssertEqual(names(inbox.takeAll()), ["1", "2", "3", "4"], "nothing lost, in order")
        inbox.hold()
        XCTAssertFalse(inbox.putBack([]), "under the limit")
    }

    func testAHoldKeepsEverythingInOrderAndReportsItsLimitOnce() {
        let inbox = IncomingInbox(holdLimit: 2, backlogLimit: 1)
        inbox.hold()
        XCTAssertEqual(inbox.append(ready, waitedOn: true), .none)
        XCTAssertEqual(inbox.append(data("1"), waitedOn: false), .holdLimitReached)
        XCTAssertEqual(inbox.append(data("2"), waitedOn: false), .none)
        XCTAssertEqual(inbox.takeAll().count, 0, "nothing is handed over while held")
        inbox.release()
        XCTAssertEqual(names(inbox.takeAll()), ["ready", "1", "2"])
    }

    func testBatchArraysAreReusedOnAFloodAndSmallOnesWhenTrafficIsLight() {
        XCTAssertTrue(IncomingInbox.keepsForReuse(capacity: 4, count: 1), "a small array is always kept")
        XCTAssertTrue(IncomingInbox.keepsForReuse(capacity: 256, count: 200), "a flood's batch array is reused")
        XCTAssertFalse(
            IncomingInbox.keepsForReuse(capacity: 256, count: 11), "a client back to small batches lets it go")
        XCTAssertFalse(IncomingInbox.keepsForReuse(capacity: 2_048, count: 2_000), "never one past the bound")
    }

    /// A data frame the transport handed over waits in the inbox for its batch (here the manual clock never lets it
    /// fall due): a stub called after it still sees it, as it saw every frame when each was handled on arrival.
    func testAStubSeesTheDataFramesHandedOverBeforeItsCall() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let players = harness.client.collection("players")
        harness.receive(.added(collection: "players", id: "lovelace", fields: ["score": 25]))
        harness.transport.receive(#"{"msg":"changed","collection":"players","id":"lovelace","fields":{"score":40}}"#)
        let task = Task { try await players.update("lovelace", ["$inc": ["score": 1]]) }
        await harness.transport.waitUntilSent(count: 1) { if case .method = $0 { true } else { false } }
        XCTAssertEqual(harness.document("players", "lovelace")?["score"], 41, "the stub incremented the server's 40")
        task.cancel()
    }

    /// The drain a data frame scheduled holds the client weakly: on a clock that never lets it fall due (a manual
    /// one, as the fuzz targets use), the closed client is still freed.
    func testAPendingBatchDoesNotKeepAClosedClientAlive() {
        weak var weakClient: DDPClient?
        let scheduler = ManualScheduler()
        do {
            let transport = InMemoryTransport()
            var configuration = DDPClient.Configuration()
            configuration.scheduler = scheduler
            let client = DDPClient(transport: transport, configuration: configuration)
            weakClient = client
            client.connect()
            client.waitUntilIdle()
            transport.open()
            transport.receive(#"{"msg":"connected","session":"S"}"#)
            transport.receive(#"{"msg":"added","collection":"c","id":"1","fields":{"a":1}}"#)
            client.close()
            client.waitUntilIdle()
            // The close's status notification holds the client until it has run on the callback queue.
            client.callbackQueue.sync {}
            client.waitUntilIdle()
        }
        XCTAssertNil(weakClient, "freed although its batch's drain is still pending on the manual clock")
        withExtendedLifetime(scheduler) {}
    }

    /// No later frame and no test hook: the scheduled drain alone brings a lone data frame to the cache.
    func testALoneDataFrameReachesTheCacheOnItsOwn() async {
        let transport = InMemoryTransport()
        var configuration = DDPClient.Configuration()
        configuration.bufferedWritesInterval = .zero
        let client = DDPClient(transport: transport, configuration: configuration)
        defer { client.close() }
        var changes = client.database.changes.makeAsyncIterator()
        client.connect()
        client.waitUntilIdle()
        transport.open()
        transport.receive(#"{"msg":"connected","session":"S"}"#)
        transport.receive(#"{"msg":"added","collection":"c","id":"1","fields":{"a":1}}"#)
        let arrived = expectation(description: "the document is in the cache")
        let watcher = Task {
            while let change = await changes.next() {
                if change.affectedDocumentKeys.contains(DocumentKey(collectionName: "c", documentID: "1")) {
                    arrived.fulfill()
                    return
                }
            }
        }
        await fulfillment(of: [arrived], timeout: 5)
        watcher.cancel()
        XCTAssertEqual(client.database.document(DocumentKey(collectionName: "c", documentID: "1"))?["a"], 1)
    }
}
