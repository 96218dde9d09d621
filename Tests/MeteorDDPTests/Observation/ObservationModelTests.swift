import Dispatch
import EJSON
import Observation
import XCTest

@testable import MeteorDDP

/// Fulfils an expectation once `predicate` holds, checking it on `queue` (where the model changes) now and at every
/// change of what it reads: no polling.
@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *)
final class ObservationWaiter: Sendable {
    private let predicate: @Sendable () -> Bool
    private let queue: DispatchQueue
    private let expectation: XCTestExpectation
    private let fulfilled = Locked(false)

    init(on queue: DispatchQueue, _ expectation: XCTestExpectation, until predicate: @escaping @Sendable () -> Bool) {
        self.predicate = predicate
        self.queue = queue
        self.expectation = expectation
        arm()
    }

    private func arm() {
        queue.async {
            var satisfied = false
            withObservationTracking {
                satisfied = self.predicate()
            } onChange: {
                self.arm()
            }
            guard satisfied else { return }
            var first = false
            self.fulfilled.mutate {
                first = !$0
                $0 = true
            }
            if first { self.expectation.fulfill() }
        }
    }
}

/// Observable models: one mutation per transaction, on the promised scheduler, observed with `withObservationTracking`.
@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *)
final class ObservationModelTests: XCTestCase {
    struct Player: Codable, Sendable, Equatable {
        var _id: String
        var score: Int
    }

    private static let queueKey = DispatchSpecificKey<String>()

    private func connected() -> ClientHarness {
        let harness = ClientHarness()
        harness.establishConnection()
        for i in 0..<5 {
            harness.receive(.added(collection: "players", id: "p\(i)", fields: ["score": .number(Double(i))]))
        }
        harness.flushData()
        return harness
    }

    /// Fulfils `expectation` at the next change of what `read` reads, recording where the change was announced.
    private func onNextChange(
        _ read: @escaping @Sendable () -> Void, _ expectation: XCTestExpectation, queues: Locked<[String?]>
    ) {
        withObservationTracking {
            read()
        } onChange: {
            queues.mutate { $0.append(DispatchQueue.getSpecific(key: Self.queueKey)) }
            expectation.fulfill()
        }
    }

    func testAQueryModelChangesOncePerTransactionOnItsQueue() throws {
        let harness = connected()
        let queue = DispatchQueue(label: "observation test")
        queue.setSpecific(key: Self.queueKey, value: "observation test")
        let model = try harness.client.collection("players", as: Player.self).observed(
            [:], FindOptions(sort: ["score": -1]), scheduler: .queue(queue))
        let loaded = expectation(description: "first result")
        let waiter = ObservationWaiter(on: queue, loaded) { model.isLoaded }
        wait(for: [loaded], timeout: 5)
        _ = waiter
        let queues = Locked<[String?]>([])
        XCTAssertEqual(model.values.map(\._id), ["p4", "p3", "p2", "p1", "p0"])
        XCTAssertEqual(model.updateCount, 1)

        // One transaction changing three documents: one mutation, announced on the queue.
        let changed = expectation(description: "one change")
        queue.sync { onNextChange({ _ = model.values }, changed, queues: queues) }
        harness.receive(.changed(collection: "players", id: "p0", fields: ["score": 10], cleared: []))
        harness.receive(.changed(collection: "players", id: "p1", fields: ["score": 11], cleared: []))
        harness.receive(.removed(collection: "players", id: "p4"))
        harness.flushData()
        wait(for: [changed], timeout: 5)
        queue.sync {}
        XCTAssertEqual(model.values.map(\._id), ["p1", "p0", "p3", "p2"])
        XCTAssertEqual(model.updateCount, 2, "one mutation for the transaction")
        XCTAssertEqual(model.decodeCount, 7, "five first, then the two changed documents")
        XCTAssertEqual(queues.value, ["observation test"], "announced on the scheduler's queue")
        model.stop()
    }

    @MainActor
    func testModelsChangeOnTheMainActorByDefault() async throws {
        let harness = connected()
        let model = try harness.client.collection("players", as: Player.self).observed(["score": ["$gte": 3]])
        let loaded = expectation(description: "first result on the main actor")
        withObservationTracking {
            _ = model.values
        } onChange: {
            MainActor.assertIsolated()
            loaded.fulfill()
        }
        await fulfillment(of: [loaded], timeout: 5)
        // The change was announced inside the main-queue block that made it; this test resumes after that block.
        XCTAssertEqual(Set(model.ids), ["p3", "p4"])
        model.stop()
    }

    func testASubscriptionModelBecomesReady() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let queue = DispatchQueue(label: "subscription model")
        let sub = harness.client.subscribe("players")
        let model = sub.observed(scheduler: .queue(queue))
        XCTAssertFalse(model.isReady)
        let ready = expectation(description: "ready")
        let waiter = ObservationWaiter(on: queue, ready) { model.isReady }
        guard case .sub(let id, _, _)? = harness.sent.last else { return XCTFail("no sub") }
        harness.receive(.ready(subscriptionIDs: [id]))
        harness.flushData()
        wait(for: [ready], timeout: 5)
        XCTAssertTrue(model.isReady)
        _ = waiter
        model.stop()
        sub.stop()
    }

    func testTheUserModelFollowsLoginsAndTheUsersDocument() async throws {
        struct User: Codable, Sendable, Equatable {
            var _id: String
            var username: String
        }
        let harness = ClientHarness()
        harness.establishConnection()
        let queue = DispatchQueue(label: "user model")
        let model = harness.client.observedUser(as: User.self, scheduler: .queue(queue))
        let login = Task { try await harness.client.login(username: "ada", password: "secret") }
        await harness.transport.waitUntilSent(count: 1) { if case .method = $0 { true } else { false } }
        harness.receive(.added(collection: "users", id: "lovelace", fields: ["username": "ada"]))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.receive(.result(id: "1", result: ["id": "lovelace", "token": "t"], error: nil))
        _ = try await value(of: login)
        XCTAssertEqual(harness.client.user?["username"], "ada", "Meteor.user()")
        let hasUser = expectation(description: "the user model has the user")
        let first = ObservationWaiter(on: queue, hasUser) { model.user == User(_id: "lovelace", username: "ada") }
        await fulfillment(of: [hasUser], timeout: 5)
        harness.receive(.changed(collection: "users", id: "lovelace", fields: ["username": "countess"], cleared: []))
        harness.flushData()
        let followed = expectation(description: "the user model follows the document")
        let second = ObservationWaiter(on: queue, followed) { model.user?.username == "countess" }
        await fulfillment(of: [followed], timeout: 5)
        let logout = Task { try await harness.client.logout() }
        await harness.transport.waitUntilSent(count: 2) { if case .method = $0 { true } else { false } }
        harness.receive(.result(id: "2", result: nil, error: nil))
        harness.receive(.updated(methodIDs: ["2"]))
        try await value(of: logout)
        let loggedOut = expectation(description: "logged out: no user")
        let third = ObservationWaiter(on: queue, loggedOut) {
            guard case .app? = model.logoutReason else { return false }
            return model.userID == nil && model.user == nil
        }
        await fulfillment(of: [loggedOut], timeout: 5)
        _ = (first, second, third)
        model.stop()
    }
}
