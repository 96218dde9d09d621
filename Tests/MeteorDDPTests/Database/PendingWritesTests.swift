import EJSON
import Foundation
import XCTest

@testable import MeteorDDP

/// Pending writes and data from the offline store, visible to the UI (Firestore's `hasPendingWrites` and
/// `fromCache`): a document, a query result, a live query's snapshots and an observed query say so, in both
/// ``PendingStubMode``s, and a change of the flags alone is one notification.
final class PendingWritesTests: XCTestCase {
    private let lovelace = DocumentKey(collectionName: "players", documentID: "lovelace")

    struct Player: Codable, Sendable, Equatable {
        var _id: String
        var score: Int
    }

    private func connected(_ mode: PendingStubMode) -> ClientHarness {
        let harness = ClientHarness { $0.pendingStubMode = mode }
        harness.establishConnection()
        harness.receive(.added(collection: "players", id: "lovelace", fields: ["score": 25]))
        harness.receive(.added(collection: "players", id: "gauss", fields: ["score": 5]))
        harness.flushData()
        harness.client.defineStub("inc") { context in
            .number(Double(try context.collection("players").update("lovelace", ["$inc": ["score": 1]])))
        }
        return harness
    }

    /// Every snapshot of a live query of the players, in order.
    private final class Snapshots: Sendable {
        let queue = DispatchQueue(label: "snapshots")
        private let recorded = Locked<[LiveQuerySnapshot]>([])
        private let token: Locked<ObservationToken?> = Locked(nil)

        init(_ live: LiveQuery) {
            let recorded = recorded
            token.mutate { $0 = live.onChange(on: queue) { snapshot in recorded.mutate { $0.append(snapshot) } } }
        }

        var all: [LiveQuerySnapshot] {
            queue.sync {}
            return recorded.value
        }
    }

    private func checkPendingWrites(_ mode: PendingStubMode) throws {
        let harness = connected(mode)
        let players = harness.client.database.collection("players")
        let live = players.observe(Query(sort: [.descending("score")]))
        defer { live.stop() }
        let snapshots = Snapshots(live)
        harness.flushData()
        XCTAssertEqual(snapshots.all.map(\.metadata.hasPendingWrites), [false])
        let recorder = ChangesRecorder(harness.client.database)

        try harness.client.call("inc") { _ in }
        harness.flushData()
        XCTAssertTrue(players.hasPendingWrites(id: "lovelace"))
        XCTAssertFalse(players.hasPendingWrites(id: "gauss"))
        XCTAssertTrue(players.findWithMetadata(Query()).metadata.hasPendingWrites)
        XCTAssertFalse(
            try players.findWithMetadata(Query(["_id": "gauss"])).metadata.hasPendingWrites, "gauss alone has none")
        XCTAssertEqual(recorder.changes.count, 1, "the stub's write and the flag: one notification")
        XCTAssertEqual(recorder.changes.first?.metadataChange.pendingWritesChanged, [lovelace])
        XCTAssertEqual(snapshots.all.map(\.metadata.hasPendingWrites), [false, true])

        // The server's version equals the stub's: no document changes, the flag alone does, in one notification.
        // (Its data and `updated` in one burst, as Meteor's server sends them: rebasing, a burst between them would
        // replay the stub over its own effect for a moment.)
        harness.client.queue.sync {
            harness.transport.receive(
                ServerMessage.changed(collection: "players", id: "lovelace", fields: ["score": 26], cleared: []))
            harness.transport.receive(ServerMessage.updated(methodIDs: ["1"]))
            harness.transport.receive(ServerMessage.result(id: "1", result: 1, error: nil))
        }
        harness.flushData()
        XCTAssertFalse(players.hasPendingWrites(id: "lovelace"))
        XCTAssertEqual(recorder.changes.count, 2)
        XCTAssertEqual(recorder.changes.last?.count, 0, "no document changed")
        XCTAssertEqual(recorder.changes.last?.metadataChange.pendingWritesChanged, [lovelace])
        let all = snapshots.all
        XCTAssertEqual(all.map(\.metadata.hasPendingWrites), [false, true, false])
        XCTAssertEqual(all.last?.diff, LiveQueryDiff(), "a flag-only snapshot")
    }

    func testPendingWritesUnderMeteorsRule() throws {
        try checkPendingWrites(.holdServerData)
    }

    func testPendingWritesRebasing() throws {
        try checkPendingWrites(.rebase)
    }

    func testAStubThatThrowsWithThrowStubExceptionsLeavesNoPendingWrite() throws {
        let harness = connected(.holdServerData)
        struct Refused: Error {}
        harness.client.defineStub("refuse") { context in
            try context.collection("players").update("lovelace", ["$inc": ["score": 1]])
            throw Refused()
        }
        XCTAssertThrowsError(
            try harness.client.call("refuse", options: MethodOptions(throwStubExceptions: true)) { _ in })
        XCTAssertFalse(harness.client.database.collection("players").hasPendingWrites(id: "lovelace"))
        // A document an earlier call still holds stays pending.
        try harness.client.call("inc") { _ in }
        XCTAssertThrowsError(
            try harness.client.call("refuse", options: MethodOptions(throwStubExceptions: true)) { _ in })
        XCTAssertTrue(harness.client.database.collection("players").hasPendingWrites(id: "lovelace"))
    }

    func testAnObservedQuerySaysWhetherItHasPendingWrites() throws {
        let harness = connected(.rebase)
        let queue = DispatchQueue(label: "observed")
        let model = try harness.client.collection("players", as: Player.self).observed(
            [:], FindOptions(sort: ["score": -1]), scheduler: .queue(queue))
        defer { model.stop() }
        let loaded = expectation(description: "loaded")
        let loadedWaiter = ObservationWaiter(on: queue, loaded) { model.isLoaded }
        wait(for: [loaded], timeout: 5)
        XCTAssertFalse(model.hasPendingWrites)
        let pending = expectation(description: "pending")
        let pendingWaiter = ObservationWaiter(on: queue, pending) { model.hasPendingWrites }
        try harness.client.call("inc") { _ in }
        harness.flushData()
        wait(for: [pending], timeout: 5)
        let confirmed = expectation(description: "confirmed")
        let confirmedWaiter = ObservationWaiter(on: queue, confirmed) { !model.hasPendingWrites }
        harness.receive(.changed(collection: "players", id: "lovelace", fields: ["score": 26], cleared: []))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.flushData()
        wait(for: [confirmed], timeout: 5)
        XCTAssertEqual(queue.sync { model.values.map(\.score) }, [26, 5])
        withExtendedLifetime((loadedWaiter, pendingWaiter, confirmedWaiter)) {}
    }

    // MARK: - From the offline store

    func testRestoredDataIsFromCacheUntilTheFirstConnectionReconcilesIt() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "pending-writes-\(UUID().uuidString)/cache.sqlite")
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        func launch() -> ClientHarness {
            let harness = ClientHarness { $0.persistence = .sqlite(at: file) }
            harness.client.defineStub("inc") { context in
                .number(Double(try context.collection("players").update("lovelace", ["$inc": ["score": 1]])))
            }
            return harness
        }
        do {
            // Run 1: "players" ready with lovelace and gauss; then, offline, one `inc`.
            let harness = launch()
            harness.establishConnection()
            let sub = harness.client.subscribe("players")
            harness.settle()
            harness.receive(.added(collection: "players", id: "lovelace", fields: ["score": 25]))
            harness.receive(.added(collection: "players", id: "gauss", fields: ["score": 5]))
            harness.receive(.ready(subscriptionIDs: [sub.id]))
            harness.flushData()
            XCTAssertFalse(harness.client.database.metadata.isFromCache, "a live session's data")
            harness.transport.fail()
            harness.settle()
            try harness.client.call("inc") { _ in }
            harness.flushData()
            harness.client.waitUntilPersisted()
        }
        let harness = launch()
        let players = harness.client.database.collection("players")
        XCTAssertTrue(harness.client.database.metadata.isFromCache)
        XCTAssertTrue(players.hasPendingWrites(id: "lovelace"), "the restored call's stub wrote it")
        let live = players.observe(Query(sort: [.descending("score")]))
        defer { live.stop() }
        let snapshots = Snapshots(live)
        harness.flushData()
        XCTAssertEqual(snapshots.all.map(\.metadata), [ResultMetadata(hasPendingWrites: true, isFromCache: true)])
        let recorder = ChangesRecorder(harness.client.database)

        let sub = harness.client.subscribe("players")
        harness.establishConnection()
        // The re-sent call runs first (under Meteor's rule it holds the new session's data until its `updated`).
        harness.receive(.result(id: "1", result: 1, error: nil))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.receive(.added(collection: "players", id: "lovelace", fields: ["score": 26]))
        harness.flushData()
        XCTAssertTrue(harness.client.database.metadata.isFromCache, "not reconciled before the subscription is ready")
        harness.receive(.added(collection: "players", id: "gauss", fields: ["score": 5]))
        harness.receive(.ready(subscriptionIDs: [sub.id]))
        harness.flushData()
        XCTAssertFalse(harness.client.database.metadata.isFromCache, "reconciled")
        XCTAssertFalse(players.hasPendingWrites(id: "lovelace"), "confirmed")
        XCTAssertEqual(recorder.changes.count, 1, "the same data: one notification, the flags'")
        XCTAssertEqual(recorder.changes.first?.count, 0)
        XCTAssertEqual(recorder.changes.first?.metadataChange.fromCacheChanged, true)
        XCTAssertEqual(recorder.changes.first?.metadataChange.pendingWritesChanged, [lovelace])
        XCTAssertEqual(
            snapshots.all.map(\.metadata),
            [
                ResultMetadata(hasPendingWrites: true, isFromCache: true),
                ResultMetadata(hasPendingWrites: false, isFromCache: false)
            ])
    }
}
