import Dispatch
import EJSON
import XCTest

@testable import MeteorDDP

/// The cache equals the server after quiescence, whatever interleaving of stubs, held data and reconnects; completions
/// keep the server's order; no change is reported that the server or a stub did not make (LC `_livedata_connected`,
/// `_livedata_data`, `_runWhenAllServerDocsAreFlushed`). Every interleaving here is chosen by the test: the data
/// buffer's queue and the client queue are stalled where a race is needed.
final class ReconnectQuiescenceTests: XCTestCase {
    private let lovelace = DocumentKey(collectionName: "players", documentID: "lovelace")
    private let gauss = DocumentKey(collectionName: "players", documentID: "gauss")

    /// A client whose ready "players" subscription holds Ada Lovelace, with a stub that sets `t` on her.
    private func connectedWithReadyPlayers() -> (ClientHarness, Subscription) {
        let harness = ClientHarness()
        harness.establishConnection()
        let sub = harness.client.subscribe("players")
        harness.receive(.added(collection: "players", id: "lovelace", fields: ["name": "Ada Lovelace", "score": 25]))
        harness.receive(.ready(subscriptionIDs: [sub.id]))
        harness.flushData()
        XCTAssertEqual(sub.status, .ready)
        harness.client.defineStub("touch") { context in
            try context.collection("players").update("lovelace", ["$set": ["t": 1]])
            return nil
        }
        harness.client.defineStub("addGauss") { context in
            try context.collection("players").insert(["_id": "gauss", "name": "Gauss"])
            return nil
        }
        return (harness, sub)
    }

    private func fields(_ harness: ClientHarness, _ key: DocumentKey) -> EJSONValue? {
        harness.client.database.document(key).map { .object($0.fields) }
    }

    /// Calls `name` with a completion that appends the method's id to `order` (completions run in order on the
    /// callback queue).
    private func call(
        _ harness: ClientHarness, _ name: String, options: MethodOptions = MethodOptions(),
        recordingIn order: Locked<[String]>, as label: String
    ) throws {
        _ = try harness.client.call(name, options: options) { _ in order.mutate { $0.append(label) } }
    }

    /// Calls 1 (plain) and 2 (a stub touching Ada); method 1's data waits for Ada, and method 2's `updated`
    /// releases her while the data buffer is stalled, so both methods have their results and wait for a flush that
    /// has not happened. Returns the gate that lets the buffer go on.
    private func twoMethodsWaitingForAStalledFlush(_ harness: ClientHarness, recordingIn order: Locked<[String]>) throws
        -> DispatchSemaphore
    {
        try call(harness, "plain", recordingIn: order, as: "1")
        try call(harness, "touch", recordingIn: order, as: "2")
        harness.receive(.updated(methodIDs: ["1"]))
        harness.receive(.result(id: "1", result: nil, error: nil))
        let bufferGate = DispatchSemaphore(value: 0)
        harness.client.updateBuffer.queue.async { bufferGate.wait() }
        harness.receive(.updated(methodIDs: ["2"]))
        harness.receive(.result(id: "2", result: nil, error: nil))
        return bufferGate
    }

    // MARK: - Defect 1: a stub during a hold takes the server's version from before the held data

    func testAStubRunWhileReconnectDataIsHeldEndsWithTheFreshServerVersion() throws {
        let (harness, sub) = connectedWithReadyPlayers()
        harness.dropAndReopen()
        harness.receive(.connected(session: "SESSION-2"))
        // The new session re-sends Ada with a newer score; it is held until the subscription is ready again.
        harness.receive(.added(collection: "players", id: "lovelace", fields: ["name": "Ada Lovelace", "score": 40]))
        _ = try harness.client.call("touch") { _ in }
        harness.receive(.ready(subscriptionIDs: [sub.id]))
        harness.flushData()
        XCTAssertEqual(fields(harness, lovelace)?["t"], 1, "the stub's effect stays until its method is done")
        harness.receive(.changed(collection: "players", id: "lovelace", fields: ["t": 1], cleared: []))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.receive(.result(id: "1", result: nil, error: nil))
        harness.flushData()
        XCTAssertEqual(
            fields(harness, lovelace), ["name": "Ada Lovelace", "score": 40, "t": 1],
            "the server's newest version, not the pre-reconnect one")
    }

    func testAStubRunWhileAWaitMethodHoldsDataEndsWithTheFreshServerVersion() throws {
        let (harness, _) = connectedWithReadyPlayers()
        _ = try harness.client.call("login", options: MethodOptions(wait: true)) { _ in }
        harness.receive(.changed(collection: "players", id: "lovelace", fields: ["score": 40], cleared: []))
        _ = try harness.client.call("touch") { _ in }
        XCTAssertEqual(fields(harness, lovelace), ["name": "Ada Lovelace", "score": 25, "t": 1])
        harness.receive(.result(id: "1", result: nil, error: nil))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.flushData()
        harness.receive(.changed(collection: "players", id: "lovelace", fields: ["t": 1], cleared: []))
        harness.receive(.updated(methodIDs: ["2"]))
        harness.receive(.result(id: "2", result: nil, error: nil))
        harness.flushData()
        XCTAssertEqual(fields(harness, lovelace), ["name": "Ada Lovelace", "score": 40, "t": 1])
    }

    // MARK: - Defect 2: a second reconnect inside the hold must not apply a partial session

    func testASecondReconnectDiscardsWhatTheAbandonedSessionSentAndRemovesNothing() throws {
        // The old code released the held data and held again at once; whether the buffer flushed in between was a
        // race, so the scenario runs several times.
        for round in 1...25 {
            let (harness, sub) = connectedWithReadyPlayers()
            harness.receive(.added(collection: "players", id: "gauss", fields: ["name": "Gauss"]))
            harness.flushData()
            let recorder = ChangesRecorder(harness.client.database)
            harness.dropAndReopen()
            harness.receive(.connected(session: "SESSION-2"))
            harness.receive(
                .added(collection: "players", id: "lovelace", fields: ["name": "Ada Lovelace", "score": 25]))
            harness.dropAndReopen()
            harness.receive(.connected(session: "SESSION-3"))
            harness.flushData()
            XCTAssertNotNil(harness.client.database.document(gauss), "round \(round): not re-sent yet, still there")
            XCTAssertEqual(recorder.changes.count, 0, "round \(round)")
            harness.receive(
                .added(collection: "players", id: "lovelace", fields: ["name": "Ada Lovelace", "score": 25]))
            harness.receive(.added(collection: "players", id: "gauss", fields: ["name": "Gauss"]))
            harness.receive(.ready(subscriptionIDs: [sub.id]))
            harness.flushData()
            XCTAssertEqual(recorder.changes.count, 0, "round \(round): the new session sent what the cache had")
            XCTAssertEqual(harness.client.database.collection("players").count, 2)
        }
    }

    // MARK: - Defect 3: completions keep the server's order

    func testACompletionWaitingForAFlushIsNotOvertakenByALaterMethod() throws {
        let (harness, _) = connectedWithReadyPlayers()
        let order = Locked<[String]>([])
        let bufferGate = try twoMethodsWaitingForAStalledFlush(harness, recordingIn: order)
        try call(harness, "plain", recordingIn: order, as: "3")
        // Method 3's messages are handled after the flush but before anything the flush hands back to the client.
        let clientGate = DispatchSemaphore(value: 0)
        harness.client.queue.async { clientGate.wait() }
        harness.client.queue.async {
            let generation = harness.client.core.connectionGeneration
            harness.client.handleIncoming(.success(.message(.updated(methodIDs: ["3"]))), generation: generation)
            harness.client.handleIncoming(
                .success(.message(.result(id: "3", result: nil, error: nil))), generation: generation)
        }
        bufferGate.signal()
        harness.client.updateBuffer.queue.sync {}
        clientGate.signal()
        harness.flushData()
        harness.client.callbackQueue.sync {}
        XCTAssertEqual(order.value, ["1", "2", "3"])
    }

    func testManyCallsMixingStubsAndPlainCallsCompleteInTheServersOrder() throws {
        let (harness, _) = connectedWithReadyPlayers()
        harness.client.defineStub("add") { context in
            try context.collection("players").insert(["_id": context.params[0] ?? nil, "n": context.params[0] ?? nil])
            return nil
        }
        let order = Locked<[String]>([])
        for index in 1...200 {
            let options = MethodOptions()
            if index % 3 == 0 {
                _ = try harness.client.call("add", params: [.string("p\(index)")], options: options) { _ in
                    order.mutate { $0.append("\(index)") }
                }
            } else {
                try call(harness, "plain", recordingIn: order, as: "\(index)")
            }
        }
        for index in 1...200 {
            if index % 3 == 0 {
                harness.transport.receive(
                    .added(collection: "players", id: "p\(index)", fields: ["n": .string("p\(index)")]))
            }
            harness.transport.receive(.updated(methodIDs: ["\(index)"]))
            harness.transport.receive(.result(id: "\(index)", result: nil, error: nil))
        }
        harness.flushData()
        harness.flushData()
        harness.client.callbackQueue.sync {}
        XCTAssertEqual(order.value, (1...200).map { "\($0)" })
    }

    // MARK: - Defect 4: no change the server or a stub did not make

    func testAStubInsertBehindAWaitMethodSurvivesAReconnectWithoutFlicker() throws {
        let (harness, sub) = connectedWithReadyPlayers()
        _ = try harness.client.call("login", options: MethodOptions(wait: true)) { _ in }
        _ = try harness.client.call("addGauss") { _ in }
        XCTAssertNotNil(harness.client.database.document(gauss))
        let recorder = ChangesRecorder(harness.client.database)
        harness.dropAndReopen()
        harness.receive(.connected(session: "SESSION-2"))
        harness.receive(.added(collection: "players", id: "lovelace", fields: ["name": "Ada Lovelace", "score": 25]))
        harness.receive(.ready(subscriptionIDs: [sub.id]))
        harness.receive(.result(id: "1", result: nil, error: nil))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.flushData()
        XCTAssertNotNil(harness.client.database.document(gauss), "the stub's insert stays until its method is done")
        XCTAssertEqual(recorder.changes.count, 0)
        XCTAssertTrue(harness.sent.contains { if case .method("2", "addGauss", _, _) = $0 { true } else { false } })
        harness.receive(.added(collection: "players", id: "gauss", fields: ["name": "Gauss"]))
        harness.receive(.updated(methodIDs: ["2"]))
        harness.receive(.result(id: "2", result: nil, error: nil))
        harness.flushData()
        XCTAssertEqual(recorder.documentChanges.count, 0, "the server's version equals the stub's")
    }

    func testAStubWriteNotMadeOnTheServerIsRevertedOnceAfterAReconnect() throws {
        let (harness, sub) = connectedWithReadyPlayers()
        _ = try harness.client.call("touch", options: MethodOptions(noRetry: true)) { _ in }
        let recorder = ChangesRecorder(harness.client.database)
        harness.dropAndReopen()
        harness.receive(.connected(session: "SESSION-2"))
        harness.receive(.added(collection: "players", id: "lovelace", fields: ["name": "Ada Lovelace", "score": 30]))
        harness.receive(.ready(subscriptionIDs: [sub.id]))
        harness.flushData()
        XCTAssertEqual(
            fields(harness, lovelace), ["name": "Ada Lovelace", "score": 30],
            "the failed method's stub is reverted to the new session's data")
        XCTAssertEqual(recorder.changes.count, 1)
        XCTAssertEqual(
            recorder.changes.first?.changeDetails(for: lovelace)?.changedFields, ["score": .set(30), "t": .removed])
    }

    // MARK: - Defect 5: nothing is reported that the server did not cause

    func testACompletionPendingAcrossAReconnectHappensOnceAndReportsNothing() async throws {
        let (harness, _) = connectedWithReadyPlayers()
        var errors = harness.client.errors.makeAsyncIterator()
        let order = Locked<[String]>([])
        let bufferGate = try twoMethodsWaitingForAStalledFlush(harness, recordingIn: order)
        // The flush that makes 1 and 2 complete is still to come when the connection drops and comes back.
        harness.transport.fail()
        harness.settle()
        harness.advance(by: .milliseconds(10))
        harness.transport.open()
        harness.receive(.connected(session: "SESSION-2"))
        bufferGate.signal()
        harness.flushData()
        harness.flushData()
        harness.client.callbackQueue.sync {}
        XCTAssertEqual(order.value, ["1", "2"], "each completes once")
        let violations = await protocolViolations(before: harness, &errors)
        XCTAssertEqual(violations, [])
    }

    func testAnUpdatedForAnUnknownMethodIsReportedAsUpdated() async {
        let harness = ClientHarness()
        harness.establishConnection()
        var errors = harness.client.errors.makeAsyncIterator()
        harness.receive(.updated(methodIDs: ["999"]))
        let error = await errors.next()
        XCTAssertEqual(
            error?.violation?.kind, .unexpected(message: "updated", reason: "no outstanding method has id 999"))
    }

    // MARK: - Waiting for stubs of sent methods only

    func testAWaitMethodCompletesWhileAStubOfAMethodQueuedBehindItIsPending() throws {
        let (harness, _) = connectedWithReadyPlayers()
        let order = Locked<[String]>([])
        try call(harness, "login", options: MethodOptions(wait: true), recordingIn: order, as: "1")
        try call(harness, "touch", recordingIn: order, as: "2")
        harness.receive(.result(id: "1", result: nil, error: nil))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.flushData()
        harness.client.callbackQueue.sync {}
        XCTAssertEqual(
            order.value, ["1"], "method 2 is not sent yet: its stub's document does not hold the wait method")
        XCTAssertTrue(harness.sent.contains { if case .method("2", "touch", _, _) = $0 { true } else { false } })
    }

    func testADocumentAlsoWrittenByAMethodQueuedBehindAWaitMethodDoesNotHoldTheFirstBlock() throws {
        // Method 1 waits for Ada, written by method 2 (sent) and method 4 (queued behind the wait method 3). Once
        // method 2 is done, only an unsent method holds her: waiting for it would never end, since it goes out only
        // after the first block (with method 1) is done.
        let (harness, _) = connectedWithReadyPlayers()
        let order = Locked<[String]>([])
        try call(harness, "plain", recordingIn: order, as: "1")
        try call(harness, "touch", recordingIn: order, as: "2")
        try call(harness, "login", options: MethodOptions(wait: true), recordingIn: order, as: "3")
        try call(harness, "touch", recordingIn: order, as: "4")
        harness.receive(.updated(methodIDs: ["1"]))
        harness.receive(.result(id: "1", result: nil, error: nil))
        harness.receive(.changed(collection: "players", id: "lovelace", fields: ["t": 1], cleared: []))
        harness.receive(.updated(methodIDs: ["2"]))
        harness.receive(.result(id: "2", result: nil, error: nil))
        harness.flushData()
        harness.client.callbackQueue.sync {}
        XCTAssertEqual(order.value, ["1", "2"])
        XCTAssertTrue(
            harness.sent.contains { if case .method("3", "login", _, _) = $0 { true } else { false } },
            "the wait method goes out")
        XCTAssertEqual(fields(harness, lovelace)?["t"], 1, "Ada keeps method 4's stub value until its updated")
    }

    func testACallWhoseDataWasVisibleBeforeADropWaitsForItsNewRunsUpdated() async throws {
        // Method 1's `updated` arrived, then the connection dropped before its result: it is sent again, and the new
        // run's `updated` (held until quiescence) must be what completes it, not the old session's.
        let (harness, _) = connectedWithReadyPlayers()
        var errors = harness.client.errors.makeAsyncIterator()
        let order = Locked<[String]>([])
        try call(harness, "plain", recordingIn: order, as: "1")
        harness.receive(.updated(methodIDs: ["1"]))
        harness.flushData()
        harness.dropAndReopen()
        XCTAssertTrue(
            harness.sent.contains { if case .method("1", "plain", _, _) = $0 { true } else { false } }, "sent again")
        harness.receive(.connected(session: "SESSION-2"))
        harness.receive(.result(id: "1", result: nil, error: nil))
        harness.flushData()
        harness.client.callbackQueue.sync {}
        XCTAssertEqual(order.value, [], "its new run's data is not visible yet")
        harness.receive(.updated(methodIDs: ["1"]))
        harness.flushData()
        harness.client.callbackQueue.sync {}
        XCTAssertEqual(order.value, ["1"])
        let violations = await protocolViolations(before: harness, &errors)
        XCTAssertEqual(violations, [])
    }

    /// The protocol violations reported before a marker frame that the client must report (so everything before it
    /// came from the test's scenario).
    private func protocolViolations(before harness: ClientHarness, _ errors: inout DDPErrors.AsyncIterator) async
        -> [String]
    {
        harness.receive(.result(id: "marker", result: nil, error: nil))
        var reported: [String] = []
        while let error = await errors.next() {
            if error.message.contains("marker") { break }
            if error.code == .protocolViolation { reported.append(error.message) }
        }
        return reported
    }
}
