import EJSON
import XCTest

@testable import MeteorDDP

/// ``PendingStubMode/rebase``: a document pending stubs wrote shows the server's newest version with the stubs
/// replayed over it, in one transaction; Meteor's rule (the default) keeps the server's version aside until `updated`.
final class StubRebaseTests: XCTestCase {
    private let lovelace = DocumentKey(collectionName: "players", documentID: "lovelace")

    /// A connected client with lovelace (score 25, blue) and the stubs `inc` (score + 1) and `setScore(n)`.
    private func connected(_ mode: PendingStubMode = .rebase) -> ClientHarness {
        let harness = ClientHarness { $0.pendingStubMode = mode }
        harness.establishConnection()
        harness.receive(.added(collection: "players", id: "lovelace", fields: ["score": 25, "color": "blue"]))
        harness.flushData()
        harness.client.defineStub("inc") { context in
            .number(Double(try context.collection("players").update("lovelace", ["$inc": ["score": 1]])))
        }
        harness.client.defineStub("setScore") { context in
            .number(
                Double(try context.collection("players").update("lovelace", ["$set": ["score": context.params[0]!]])))
        }
        return harness
    }

    private func fields(_ harness: ClientHarness, _ id: String = "lovelace") -> EJSONValue? {
        harness.document("players", id).map { .object($0.fields) }
    }

    /// Opens an app transaction on another thread and returns once it holds the cache's write lock. The function
    /// returned lets it end (running `atItsEnd` inside it first) and waits until it has.
    private func holdAnAppTransaction(
        _ harness: ClientHarness, atItsEnd: @escaping @Sendable () -> Void = {}
    ) -> () -> Void {
        let holding = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let ended = expectation(description: "the app's transaction ended")
        Thread {
            harness.client.database.performUpdates {
                holding.signal()
                proceed.wait()
                atItsEnd()
            }
            ended.fulfill()
        }.start()
        holding.wait()
        return {
            proceed.signal()
            self.wait(for: [ended], timeout: 10)
        }
    }

    /// The errors reported before a `result` for an unknown id, which the test sends now (reported after them).
    private func reportedBeforeAMarker(_ harness: ClientHarness, _ errors: inout DDPErrors.AsyncIterator) async
        -> [DDPError]
    {
        harness.receive(.result(id: "marker", result: nil, error: nil))
        var reported: [DDPError] = []
        while let error = await errors.next(), !error.message.contains("marker") { reported.append(error) }
        return reported
    }

    /// Several server messages handled as one burst (the transport hands them over before the client drains).
    private func receiveTogether(_ harness: ClientHarness, _ messages: [ServerMessage]) {
        harness.client.queue.sync {
            for message in messages { harness.transport.receive(message) }
        }
        harness.settle()
    }

    /// The server ran call `id` (score is now `score`): its data, result and `updated` in one burst.
    private func serverRan(_ harness: ClientHarness, call id: String, score: Int) {
        receiveTogether(
            harness,
            [
                .changed(collection: "players", id: "lovelace", fields: ["score": .number(Double(score))], cleared: []),
                .result(id: id, result: 1, error: nil), .updated(methodIDs: [id])
            ])
    }

    func testMeteorsRuleKeepsTheServersChangeAsideUntilUpdated() throws {
        let harness = connected(.holdServerData)
        try harness.client.call("inc") { _ in }
        harness.receive(.changed(collection: "players", id: "lovelace", fields: ["color": "red"], cleared: []))
        harness.flushData()
        XCTAssertEqual(fields(harness), ["score": 26, "color": "blue"], "frozen at the local version")
    }

    func testTheServersChangeShowsAtOnceWithThePendingStubsOnTop() throws {
        let harness = connected()
        try harness.client.call("inc") { _ in }
        try harness.client.call("inc") { _ in }
        XCTAssertEqual(fields(harness), ["score": 27, "color": "blue"])
        // Another user paints lovelace red before either call ran on the server.
        harness.receive(.changed(collection: "players", id: "lovelace", fields: ["color": "red"], cleared: []))
        harness.flushData()
        XCTAssertEqual(fields(harness), ["score": 27, "color": "red"])
        // The first call's effect and its `updated` together: its stub leaves, the second one's stays on top.
        serverRan(harness, call: "1", score: 26)
        harness.flushData()
        XCTAssertEqual(fields(harness), ["score": 27, "color": "red"])
        serverRan(harness, call: "2", score: 27)
        harness.flushData()
        XCTAssertEqual(fields(harness), ["score": 27, "color": "red"])
        XCTAssertTrue(
            harness.client.queue.sync { harness.client.core.session.serverDocuments.isEmpty },
            "nothing kept aside any more")
        XCTAssertTrue(harness.client.queue.sync { harness.client.core.session.stubReplays.calls.isEmpty })
    }

    func testAReplayIsOneChangeInOneTransactionWithTheOtherServerData() throws {
        let harness = connected()
        try harness.client.call("inc") { _ in }
        let recorder = ChangesRecorder(harness.client.database)
        receiveTogether(
            harness,
            [
                .changed(collection: "players", id: "lovelace", fields: ["color": "red"], cleared: []),
                .added(collection: "players", id: "gauss", fields: ["score": 5])
            ])
        harness.flushData()
        XCTAssertEqual(recorder.changes.count, 1, "the replay and the other document's data land together")
        let change = recorder.changes.first
        XCTAssertEqual(change?.changeDetails(for: lovelace)?.changedFields, ["color": .set("red")])
        XCTAssertEqual(
            change?.changeDetails(for: DocumentKey(collectionName: "players", documentID: "gauss"))?.changeType, .add)
    }

    func testAReplayThatLeavesTheDocumentAsItWasPostsNothing() throws {
        let harness = connected()
        let runs = CountBox()
        harness.client.defineStub("setScore") { context in
            runs.increment()
            return .number(
                Double(try context.collection("players").update("lovelace", ["$set": ["score": context.params[0]!]])))
        }
        try harness.client.call("setScore", params: [99]) { _ in }
        let recorder = ChangesRecorder(harness.client.database)
        let afterCall = runs.value
        // Another user's score is overwritten by the pending stub's: what is shown does not change.
        harness.receive(.changed(collection: "players", id: "lovelace", fields: ["score": 30], cleared: []))
        harness.flushData()
        XCTAssertEqual(runs.value, afterCall + 1, "the stub was replayed")
        XCTAssertEqual(fields(harness), ["score": 99, "color": "blue"])
        XCTAssertEqual(recorder.changes.count, 0)
    }

    func testNothingIsReplayedWithoutAServerChangeToAStubWrittenDocument() throws {
        let harness = connected()
        let runs = CountBox()
        harness.client.defineStub("counted") { context in
            runs.increment()
            return .number(Double(try context.collection("players").update("lovelace", ["$inc": ["score": 1]])))
        }
        try harness.client.call("counted") { _ in }
        let afterCall = runs.value
        harness.receive(.added(collection: "players", id: "gauss", fields: ["score": 5]))
        harness.receive(.result(id: "1", result: 1, error: nil))
        harness.flushData()
        XCTAssertEqual(runs.value, afterCall, "data for other documents and a result replay nothing")
        harness.receive(.changed(collection: "players", id: "lovelace", fields: ["color": "red"], cleared: []))
        harness.flushData()
        XCTAssertEqual(runs.value, afterCall + 1, "a change to the stub's document replays it once")
    }

    func testAReplayMakesTheSameIDs() throws {
        let harness = connected()
        harness.client.defineStub("addAndBump") { context in
            let id = try context.collection("players").insert(["score": 1])
            try context.collection("players").update("lovelace", ["$inc": ["score": 1]])
            return id.map(EJSONValue.string)
        }
        let id = try XCTUnwrap(
            try harness.client.call("addAndBump", options: MethodOptions(returnStubValue: true)) { _ in }?.stringValue)
        harness.receive(.changed(collection: "players", id: "lovelace", fields: ["color": "red"], cleared: []))
        harness.flushData()
        let players = harness.client.database.collection("players").documents.map(\.id)
        XCTAssertEqual(Set(players), ["lovelace", id], "the replayed insert made the same id, once")
        XCTAssertEqual(fields(harness), ["score": 26, "color": "red"])
    }

    func testAStubThatStartsThrowingWhenReplayedIsReportedOnceAndItsCallGoesOn() async throws {
        let harness = connected()
        harness.receive(.added(collection: "players", id: "gauss", fields: ["score": 5]))
        struct Gone: Error {}
        harness.client.defineStub("bumpBoth") { context in
            let players = context.collection("players")
            try players.update("gauss", ["$inc": ["score": 1]])
            guard players.document(id: "lovelace") != nil else { throw Gone() }
            return .number(Double(try players.update("lovelace", ["$inc": ["score": 1]])))
        }
        var errors = harness.client.errors.makeAsyncIterator()
        try harness.client.call("bumpBoth") { _ in }
        // Someone else removes lovelace, then changes gauss: both replays throw; the first is reported.
        harness.receive(.removed(collection: "players", id: "lovelace"))
        harness.flushData()
        harness.receive(.changed(collection: "players", id: "gauss", fields: ["color": "red"], cleared: []))
        harness.flushData()
        XCTAssertNil(harness.document("players", "lovelace"))
        XCTAssertEqual(fields(harness, "gauss"), ["score": 6, "color": "red"], "what it wrote before throwing stays")
        let reported = await reportedBeforeAMarker(harness, &errors).filter { $0.code == .stubReplayFailed }
        XCTAssertEqual(reported.map(\.methodName), ["bumpBoth"])
        XCTAssertEqual(
            harness.sent.filter { if case .method(_, "bumpBoth", _, _) = $0 { true } else { false } }.count, 1,
            "the call went out")
    }

    func testADebugBuildReportsAStubThatIsNotReplayable() async throws {
        #if !DEBUG
            throw XCTSkip("the check runs in debug builds")
        #else
            let harness = connected()
            let runs = CountBox()
            harness.client.defineStub("impure") { context in
                runs.increment()
                return .number(
                    Double(
                        try context.collection("players").update(
                            "lovelace", ["$set": ["runs": .number(Double(runs.value))]])))
            }
            var errors = harness.client.errors.makeAsyncIterator()
            try harness.client.call("inc") { _ in }
            try harness.client.call("impure") { _ in }
            let reported = await reportedBeforeAMarker(harness, &errors).filter { $0.code == .stubNotReplayable }
            XCTAssertEqual(reported.map(\.methodName), ["impure"], "inc is replayable, impure is not")
            XCTAssertEqual(fields(harness), ["score": 26, "color": "blue", "runs": 2], "the second run's writes stay")
        #endif
    }

    /// "players" ready, `inc` called, then a reconnect whose new session sends lovelace green (the call not run yet)
    /// and makes the subscription ready again.
    private func reconnectedWithAPendingInc(_ mode: PendingStubMode) throws -> ClientHarness {
        let harness = connected(mode)
        let subscription = harness.client.subscribe("players")
        harness.receive(.ready(subscriptionIDs: [subscription.id]))
        harness.flushData()
        try harness.client.call("inc") { _ in }
        harness.dropAndReopen()
        harness.receive(.connected(session: "SESSION-2"))
        harness.receive(.added(collection: "players", id: "lovelace", fields: ["score": 25, "color": "green"]))
        harness.receive(.ready(subscriptionIDs: [subscription.id]))
        harness.flushData()
        return harness
    }

    func testAfterAReconnectTheNewSessionsDataShowsAtReadyWithTheResentStubOnTop() throws {
        // Meteor holds the new session's data until the re-sent call's `updated`; a rebasing client shows it at
        // quiescence (the subscription ready again), with the stub replayed over it.
        let harness = try reconnectedWithAPendingInc(.rebase)
        XCTAssertFalse(harness.client.queue.sync { harness.client.core.isHoldingForQuiescence })
        XCTAssertEqual(fields(harness), ["score": 26, "color": "green"])
        serverRan(harness, call: "1", score: 26)
        harness.flushData()
        XCTAssertEqual(fields(harness), ["score": 26, "color": "green"], "the server's version, the stub not twice")
        XCTAssertTrue(harness.client.queue.sync { harness.client.core.session.stubReplays.calls.isEmpty })
    }

    func testUnderMeteorsRuleTheResentCallHoldsTheNewSessionsData() throws {
        let harness = try reconnectedWithAPendingInc(.holdServerData)
        XCTAssertTrue(harness.client.queue.sync { harness.client.core.isHoldingForQuiescence })
        XCTAssertEqual(fields(harness), ["score": 26, "color": "blue"])
    }

    // MARK: - Review mends

    func testAReplayDoesNotWaitForAnAppTransactionThatWaitsForTheClientQueue() throws {
        let harness = connected()
        try harness.client.call("inc") { _ in }
        // At its end, it waits for the client queue, holding the write lock.
        let endTheTransaction = holdAnAppTransaction(harness) { _ = harness.client.subscribe("other") }
        let handled = expectation(description: "the burst was handled")
        DispatchQueue.global().async {
            harness.transport.receive(
                ServerMessage.changed(collection: "players", id: "lovelace", fields: ["color": "red"], cleared: []))
            harness.settle()
            handled.fulfill()
        }
        // A client queue that waited for the write lock here would never run the app's `subscribe`.
        wait(for: [handled], timeout: 10)
        endTheTransaction()
        harness.flushData()
        XCTAssertEqual(fields(harness), ["score": 26, "color": "red"])
    }

    /// A replay the app's transaction holds up waits for nothing: the client queue tries again once the buffer's
    /// queue is done, then a millisecond later on the client's scheduler (issue 48: it waited on a semaphore, up to
    /// 2 ms a try, and retried with a real-time `asyncAfter` no test clock could see).
    func testAReplayHeldUpByAnAppTransactionRetriesOnTheClientsSchedulerWithoutWaiting() throws {
        let harness = connected()
        try harness.client.call("inc") { _ in }
        harness.settle()
        let endTheTransaction = holdAnAppTransaction(harness)
        harness.transport.receive(
            ServerMessage.changed(collection: "players", id: "lovelace", fields: ["color": "red"], cleared: []))
        harness.settle()
        let retryScheduled = XCTNSPredicateExpectation(
            predicate: NSPredicate { _, _ in harness.scheduler.pendingDelays.contains(.milliseconds(1)) }, object: nil)
        wait(for: [retryScheduled], timeout: 10)
        XCTAssertEqual(fields(harness), ["score": 26, "color": "blue"], "not replayed while the app holds the lock")
        endTheTransaction()
        harness.scheduler.advance(by: .milliseconds(1))
        harness.client.queue.sync {}
        harness.client.database.notificationQueue.sync {}
        XCTAssertEqual(fields(harness), ["score": 26, "color": "red"], "replayed by the scheduled retry")
    }

    func testCallsAReplayedStubMakesCompleteOnlyOnce() throws {
        let harness = connected()
        let completions = CountBox()
        harness.client.defineStub("touch") { _ in nil }
        harness.client.defineStub("incAndTouch") { [client = harness.client] context in
            try client.call("touch") { _ in completions.increment() }
            return .number(Double(try context.collection("players").update("lovelace", ["$inc": ["score": 1]])))
        }
        try harness.client.call("incAndTouch") { _ in }
        harness.receive(.changed(collection: "players", id: "lovelace", fields: ["color": "red"], cleared: []))
        harness.receive(.changed(collection: "players", id: "lovelace", fields: ["color": "green"], cleared: []))
        harness.flushData()
        harness.client.callbackQueue.sync {}
        XCTAssertEqual(fields(harness), ["score": 26, "color": "green"], "replayed twice")
        XCTAssertEqual(completions.value, 1, "the nested call completed when the stub first ran, only")
    }

    func testAStubThatThrewWhenCalledIsNotReportedWhenItsReplayThrowsToo() async throws {
        let harness = connected()
        struct Refused: Error {}
        harness.client.defineStub("bumpThenRefuse") { context in
            try context.collection("players").update("lovelace", ["$inc": ["score": 1]])
            throw Refused()
        }
        var errors = harness.client.errors.makeAsyncIterator()
        try harness.client.call("bumpThenRefuse") { _ in }
        harness.receive(.changed(collection: "players", id: "lovelace", fields: ["color": "red"], cleared: []))
        harness.flushData()
        XCTAssertEqual(fields(harness), ["score": 26, "color": "red"], "replayed, its write before throwing kept")
        let reported = await reportedBeforeAMarker(harness, &errors).map(\.code)
        XCTAssertFalse(reported.contains(.stubReplayFailed), "\(reported)")
    }

    func testADebugBuildReportsAStubThatThrowsOnlyOnItsSecondRun() async throws {
        #if !DEBUG
            throw XCTSkip("the check runs in debug builds")
        #else
            let harness = connected()
            let runs = CountBox()
            struct Second: Error {}
            harness.client.defineStub("flaky") { _ in
                runs.increment()
                if runs.value % 2 == 0 { throw Second() }
                return nil
            }
            var errors = harness.client.errors.makeAsyncIterator()
            XCTAssertThrowsError(
                try harness.client.call("flaky", options: MethodOptions(throwStubExceptions: true)) { _ in })
            let reported = await reportedBeforeAMarker(harness, &errors).filter { $0.code == .stubNotReplayable }
            XCTAssertEqual(reported.map(\.methodName), ["flaky"])
        #endif
    }
}
