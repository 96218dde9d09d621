import EJSON
import XCTest

@testable import MeteorDDP

/// Stubs change the cache at once; the server's view replaces theirs when every method that wrote a document has its
/// `updated` (meteor-ios METCollectionTests and METDDPClientLatencyCompensationTests, Meteor's transcripts).
final class LatencyCompensationTests: XCTestCase {
    private let lovelace = DocumentKey(collectionName: "players", documentID: "lovelace")

    private func connectedWithPlayers() -> ClientHarness {
        let harness = ClientHarness()
        harness.establishConnection()
        harness.receive(
            .added(
                collection: "players", id: "lovelace", fields: ["name": "Ada Lovelace", "score": 25, "color": "blue"]))
        harness.flushData()
        return harness
    }

    private func methodIDs(_ harness: ClientHarness) -> [String] {
        harness.sent.compactMap { if case .method(let id, _, _, _) = $0 { id } else { nil } }
    }

    // MARK: - Insert

    func testInsertingCallsTheInsertMethodAndAddsTheDocumentAtOnce() throws {
        let harness = connectedWithPlayers()
        let players = harness.client.collection("players")
        let id = try players.insert(["_id": "gauss", "name": "Carl Friedrich Gauss", "score": 5])
        XCTAssertEqual(id, "gauss")
        XCTAssertEqual(players.document(id: "gauss")?["score"], 5, "the stub wrote it synchronously")
        harness.settle()
        XCTAssertEqual(
            harness.sent.last,
            .method(
                id: "1", method: "/players/insert",
                params: [["_id": "gauss", "name": "Carl Friedrich Gauss", "score": 5]], randomSeed: nil))
    }

    func testInsertingWithoutAnIDGeneratesOne() throws {
        let harness = connectedWithPlayers()
        let id = try harness.client.collection("players").insert(["name": "Anonymous"])
        XCTAssertEqual(id.count, 17)
        XCTAssertNotNil(harness.document("players", id))
    }

    func testInsertingAnExistingIDChangesNothingAndThrows() {
        let harness = connectedWithPlayers()
        XCTAssertThrowsError(try harness.client.collection("players").insert(["_id": "lovelace", "name": "Impostor"]))
        XCTAssertEqual(harness.document("players", "lovelace")?["name"], "Ada Lovelace")
    }

    func testServerAddingTheSameDocumentAfterAnInsertPostsNothingMore() throws {
        let harness = connectedWithPlayers()
        let recorder = ChangesRecorder(harness.client.database)
        try harness.client.collection("players").insert(["_id": "gauss", "score": 5])
        XCTAssertEqual(recorder.changes.count, 1, "the stub's insert")
        XCTAssertEqual(
            recorder.changes.first?.changeDetails(for: DocumentKey(collectionName: "players", documentID: "gauss"))?
                .changeType, .add)
        harness.receive(.added(collection: "players", id: "gauss", fields: ["score": 5]))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.receive(.result(id: "1", result: nil, error: nil))
        harness.flushData()
        XCTAssertEqual(
            recorder.documentChanges.count, 1, "the server's identical version replaced the stub's: no change")
        XCTAssertEqual(
            recorder.changes.last?.metadataChange.pendingWritesChanged,
            [DocumentKey(collectionName: "players", documentID: "gauss")], "the flag alone: it is confirmed")
    }

    func testUpdatedWithoutTheServerAddingTheDocumentRevertsTheInsert() throws {
        let harness = connectedWithPlayers()
        try harness.client.collection("players").insert(["_id": "ghost", "score": 1])
        let recorder = ChangesRecorder(harness.client.database)
        harness.receive(.result(id: "1", result: nil, error: MeteorError(error: .number(403), reason: "Access denied")))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.flushData()
        XCTAssertNil(harness.document("players", "ghost"))
        XCTAssertEqual(
            recorder.changes.last?.changeDetails(for: DocumentKey(collectionName: "players", documentID: "ghost"))?
                .changeType, .remove)
    }

    func testServerAddingADifferentDocumentReplacesTheStubsVersion() throws {
        let harness = connectedWithPlayers()
        try harness.client.collection("players").insert(["_id": "gauss", "score": 5, "color": "red"])
        let recorder = ChangesRecorder(harness.client.database)
        harness.receive(.added(collection: "players", id: "gauss", fields: ["score": 30]))
        harness.flushData()
        XCTAssertEqual(
            harness.document("players", "gauss")?["score"], 5, "server data for a stub-written document waits")
        harness.receive(.updated(methodIDs: ["1"]))
        harness.flushData()
        let details = recorder.changes.last?.changeDetails(
            for: DocumentKey(collectionName: "players", documentID: "gauss"))
        XCTAssertEqual(details?.changedFields, ["score": .set(30), "color": .removed])
    }

    /// A second `added` for a document a pending stub wrote (a second publication's, say) merges into the server's
    /// copy kept aside: the fields it does not list stay (Meteor 3.6, PR #14768; before it the copy was replaced).
    func testARepeatedAddedForAStubWrittenDocumentMergesIntoTheServersCopy() async throws {
        let harness = connectedWithPlayers()
        let task = Task { try await harness.client.collection("players").update("lovelace", ["$set": ["score": 30]]) }
        await harness.transport.waitUntilSent(count: 1) { if case .method = $0 { true } else { false } }
        harness.receive(.added(collection: "players", id: "lovelace", fields: ["score": 30, "rank": 1]))
        harness.flushData()
        XCTAssertNil(harness.document("players", "lovelace")?["rank"], "server data for a stub-written document waits")
        harness.receive(.updated(methodIDs: ["1"]))
        harness.receive(.result(id: "1", result: 1, error: nil))
        _ = try await value(of: task)
        harness.flushData()
        XCTAssertEqual(
            harness.document("players", "lovelace").map { EJSONValue.object($0.fields) },
            ["name": "Ada Lovelace", "score": 30, "color": "blue", "rank": 1])
    }

    // MARK: - Update and remove

    func testUpdatingCallsTheUpdateMethodAndChangesTheCacheAtOnce() async throws {
        let harness = connectedWithPlayers()
        let task = Task {
            try await harness.client.collection("players").update(
                "lovelace", ["$set": ["score": 30], "$unset": ["color": ""]])
        }
        await harness.transport.waitUntilSent(count: 1) { if case .method = $0 { true } else { false } }
        XCTAssertEqual(
            harness.document("players", "lovelace").map { EJSONValue.object($0.fields) },
            ["name": "Ada Lovelace", "score": 30])
        XCTAssertEqual(
            harness.sent.last,
            .method(
                id: "1", method: "/players/update",
                params: [["_id": "lovelace"], ["$set": ["score": 30], "$unset": ["color": ""]], [:]], randomSeed: nil),
            "Meteor's client sends the options too, {} when there are none")
        harness.receive(.changed(collection: "players", id: "lovelace", fields: ["score": 30], cleared: ["color"]))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.receive(.result(id: "1", result: 1, error: nil))
        let affected = try await value(of: task)
        XCTAssertEqual(affected, 1)
    }

    func testAStubThatThrowsWithThrowStubExceptionsLeavesNothingBehind() throws {
        let harness = connectedWithPlayers()
        struct Halfway: Error {}
        harness.client.defineStub("halfway") { context in
            try context.collection("players").update("lovelace", ["$set": ["score": 99]])
            _ = try context.collection("players").insert(["_id": "ghost", "name": "Ghost"])
            throw Halfway()
        }
        XCTAssertThrowsError(
            try harness.client.call("halfway", options: MethodOptions(throwStubExceptions: true)) { _ in })
        harness.flushData()
        XCTAssertEqual(
            harness.document("players", "lovelace")?["score"], 25,
            "the stub's write before throwing is undone: no call will restore it")
        XCTAssertNil(harness.document("players", "ghost"))
        XCTAssertFalse(harness.sent.contains { if case .method = $0 { true } else { false } }, "nothing was sent")
    }

    func testWhatAThrowingStubWroteIsRestoredByTheServersVersionAtUpdated() throws {
        let harness = connectedWithPlayers()
        struct Halfway: Error {}
        harness.client.defineStub("halfway") { context in
            try context.collection("players").update("lovelace", ["$set": ["score": 99]])
            throw Halfway()
        }
        _ = try harness.client.call("halfway") { _ in }
        XCTAssertEqual(
            harness.document("players", "lovelace")?["score"], 99, "the call is sent; the stub's write shows meanwhile")
        guard case .method(let id, "halfway", _, _)? = harness.sent.last else { return XCTFail("not sent") }
        harness.receive(.result(id: id, result: nil, error: MeteorError(error: .number(500), reason: "failed")))
        harness.receive(.updated(methodIDs: [id]))
        harness.flushData()
        XCTAssertEqual(
            harness.document("players", "lovelace")?["score"], 25, "the server's version, as Meteor restores it")
    }

    func testServerSendingADifferentUpdateWinsAndRestoresWhatTheStubRemoved() throws {
        let harness = connectedWithPlayers()
        harness.client.defineStub("score") { context in
            try context.collection("players").update("lovelace", ["$set": ["score": 30], "$unset": ["color": ""]])
            return nil
        }
        _ = try harness.client.call("score") { _ in }
        let recorder = ChangesRecorder(harness.client.database)
        harness.receive(.changed(collection: "players", id: "lovelace", fields: ["score": 35], cleared: []))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.flushData()
        XCTAssertEqual(
            harness.document("players", "lovelace").map { EJSONValue.object($0.fields) },
            ["name": "Ada Lovelace", "score": 35, "color": "blue"])
        XCTAssertEqual(recorder.changes.count, 1)
        XCTAssertEqual(
            recorder.changes.first?.changeDetails(for: lovelace)?.changedFields,
            ["score": .set(35), "color": .set("blue")])
    }

    func testRemovingRollsBackWhenTheServerDoesNotRemoveAndAppliesItsUpdate() throws {
        let harness = connectedWithPlayers()
        harness.client.defineStub("drop") { context in
            context.collection("players").remove("lovelace") == 1 ? true : false
        }
        XCTAssertEqual(try harness.client.call("drop", options: MethodOptions(returnStubValue: true)) { _ in }, true)
        XCTAssertNil(harness.document("players", "lovelace"))
        harness.receive(.changed(collection: "players", id: "lovelace", fields: ["score": 30], cleared: []))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.flushData()
        XCTAssertEqual(harness.document("players", "lovelace")?["score"], 30, "re-added with the server's change")
    }

    // MARK: - Several methods

    func testTwoStubsOnOneDocumentWaitForBothUpdatedThenApplyTheServersVersionOnce() throws {
        let harness = connectedWithPlayers()
        harness.client.defineStub("inc") { context in
            try context.collection("players").update("lovelace", ["$inc": ["score": 1]])
            return nil
        }
        _ = try harness.client.call("inc") { _ in }
        _ = try harness.client.call("inc") { _ in }
        XCTAssertEqual(harness.document("players", "lovelace")?["score"], 27)
        let recorder = ChangesRecorder(harness.client.database)
        harness.receive(
            .changed(collection: "players", id: "lovelace", fields: ["score": 30, "color": "blue"], cleared: []))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.flushData()
        XCTAssertEqual(
            harness.document("players", "lovelace")?["score"], 27, "the second method still holds the document")
        harness.receive(.updated(methodIDs: ["2"]))
        harness.flushData()
        XCTAssertEqual(harness.document("players", "lovelace")?["score"], 30)
        XCTAssertEqual(recorder.changes.count, 1)
    }

    func testADocumentIsFlushedWhenItsMethodIsDoneEvenIfAnotherDocumentsMethodIsNot() throws {
        let harness = connectedWithPlayers()
        harness.client.defineStub("touch") { context in
            let id = (context.params[0]?.stringValue ?? "")
            if context.collection("players").document(id: id) == nil {
                try context.collection("players").insert(["_id": .string(id)])
            }
            try context.collection("players").update(id, ["$set": ["touched": true]])
            return nil
        }
        _ = try harness.client.call("touch", params: ["lovelace"]) { _ in }
        _ = try harness.client.call("touch", params: ["gauss"]) { _ in }
        harness.receive(.changed(collection: "players", id: "lovelace", fields: ["touched": "server"], cleared: []))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.flushData()
        XCTAssertEqual(harness.document("players", "lovelace")?["touched"], "server")
        XCTAssertEqual(harness.document("players", "gauss")?["touched"], true)
    }

    func testAMethodCompletesOnlyWhenEveryCurrentlyBufferedDocumentIsFlushed() throws {
        let harness = connectedWithPlayers()
        harness.client.defineStub("touch") { context in
            try context.collection("players").update((context.params[0]?.stringValue ?? ""), ["$set": ["t": 1]])
            return nil
        }
        harness.receive(.added(collection: "players", id: "gauss", fields: [:]))
        harness.flushData()
        let first = expectation(description: "method 1 completes")
        let completions = CountBox()
        _ = try harness.client.call("touch", params: ["lovelace"]) { _ in
            completions.increment()
            first.fulfill()
        }
        _ = try harness.client.call("touch", params: ["gauss"]) { _ in }
        harness.receive(.result(id: "1", result: nil, error: nil))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.flushData()
        harness.client.callbackQueue.sync {}
        XCTAssertEqual(completions.value, 0, "method 1 waits until gauss (written by method 2's stub) is flushed too")
        harness.receive(.updated(methodIDs: ["2"]))
        harness.flushData()
        wait(for: [first], timeout: 5)
    }

    func testReadyWaitsForDocumentsWrittenByStubsOfSentMethods() throws {
        let harness = connectedWithPlayers()
        harness.client.defineStub("touch") { context in
            try context.collection("players").update("lovelace", ["$set": ["t": 1]])
            return nil
        }
        let sub = harness.client.subscribe("players")
        _ = try harness.client.call("touch") { _ in }
        harness.receive(.ready(subscriptionIDs: [sub.id]))
        harness.flushData()
        XCTAssertEqual(sub.status, .pending, "not ready while a stub-written document is unflushed")
        let ready = expectation(description: "ready")
        sub.whenReady { _ in ready.fulfill() }
        harness.receive(.updated(methodIDs: ["1"]))
        harness.flushData()
        wait(for: [ready], timeout: 5)
    }

    func testAStubInsertMakesTheIDTheServerMakesFromTheSameSeed() throws {
        let harness = connectedWithPlayers()
        let made = SeedBox()
        harness.client.defineStub("addPlayer") { context in
            let id = try context.collection("players").insert(["name": context.params[0] ?? nil])
            made.set(id ?? "")
            return id.map { .string($0) }
        }
        _ = try harness.client.call("addPlayer", params: ["Grace"]) { _ in }
        harness.settle()
        guard case .method(_, _, _, let seed?) = harness.sent.last else { return XCTFail("randomSeed sent") }
        XCTAssertEqual(
            made.value, RandomStream(seed: seed).id(forSequence: "/collection/players"),
            "the server derives the same id")
        XCTAssertNotNil(harness.document("players", made.value ?? ""))
    }
}
