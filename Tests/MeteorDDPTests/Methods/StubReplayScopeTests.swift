import EJSON
import XCTest

@testable import MeteorDDP

/// ``PendingStubMode/rebase`` replays the calls a change concerns (those whose stubs wrote or read a changed
/// document, and what they in turn wrote), not every pending call, and the cache ends as a replay of every call would
/// leave it.
final class StubReplayScopeTests: XCTestCase {
    /// A connected client in rebase mode with `count` players (`p0`…, score 0), a document `pointer` of collection
    /// `meta` naming `p0`, and stubs:
    /// - `inc(id)`: the player's score + 1, its runs counted by id;
    /// - `copyScore(from, to)`: sets `to`'s `copy` to `from`'s score;
    /// - `countPlayers`: sets `meta/stats`'s `players` to the number of players (a read of the whole collection);
    /// - `mark(value)`: sets `mark` on the player `pointer` names; `markP1(value)`: sets `mark` on `p1`.
    private func connected(players count: Int = 2, runs: Locked<[String: Int]> = Locked([:])) -> ClientHarness {
        let harness = ClientHarness { $0.pendingStubMode = .rebase }
        harness.establishConnection()
        for index in 0..<count { harness.receive(.added(collection: "players", id: "p\(index)", fields: ["score": 0])) }
        harness.receive(.added(collection: "meta", id: "pointer", fields: ["target": "p0"]))
        harness.flushData()
        let client = harness.client
        client.defineStub("inc") { context in
            let id = context.params[0]!.stringValue!
            runs.mutate { $0[id, default: 0] += 1 }
            return .number(Double(try context.collection("players").update(id, ["$inc": ["score": 1]])))
        }
        client.defineStub("copyScore") { context in
            let score = context.collection("players").document(id: context.params[0]!.stringValue!)?["score"]
            let to = context.params[1]!.stringValue!
            return .number(Double(try context.collection("players").update(to, ["$set": ["copy": score ?? .null]])))
        }
        let players = client.database.collection("players")
        client.defineStub("countPlayers") { context in
            let count = players.count
            _ = try context.collection("meta").update(
                ["_id": "stats"], ["$set": ["players": .number(Double(count))]], options: UpdateOptions(upsert: true))
            return nil
        }
        client.defineStub("mark") { context in
            let target = context.collection("meta").document(id: "pointer")?["target"]?.stringValue ?? "p0"
            return .number(
                Double(try context.collection("players").update(target, ["$set": ["mark": context.params[0]!]])))
        }
        client.defineStub("markP1") { context in
            .number(Double(try context.collection("players").update("p1", ["$set": ["mark": context.params[0]!]])))
        }
        return harness
    }

    private func fields(_ harness: ClientHarness, _ id: String) -> EJSONValue? {
        harness.document("players", id).map { .object($0.fields) }
    }

    func testAServerChangeReplaysOnlyTheCallsThatWroteTheDocument() throws {
        let runs = Locked<[String: Int]>([:])
        let harness = connected(players: 100, runs: runs)
        for index in 0..<100 { try harness.client.call("inc", params: [.string("p\(index)")]) { _ in } }
        let afterCalls = runs.value
        harness.receive(.changed(collection: "players", id: "p7", fields: ["name": "seven"], cleared: []))
        harness.flushData()
        XCTAssertEqual(fields(harness, "p7"), ["score": 1, "name": "seven"])
        var replayed = runs.value
        replayed.merge(afterCalls) { now, before in now - before }
        XCTAssertEqual(replayed.filter { $0.value != 0 }, ["p7": 1], "one stub of the 100 ran again")
    }

    func testACallThatReadADocumentAnotherPendingStubWroteIsReplayedWithIt() throws {
        let harness = connected()
        try harness.client.call("inc", params: ["p0"]) { _ in }
        try harness.client.call("copyScore", params: ["p0", "p1"]) { _ in }
        XCTAssertEqual(fields(harness, "p1"), ["score": 0, "copy": 1])
        harness.receive(.changed(collection: "players", id: "p0", fields: ["score": 40], cleared: []))
        harness.flushData()
        XCTAssertEqual(fields(harness, "p0"), ["score": 41])
        XCTAssertEqual(fields(harness, "p1"), ["score": 0, "copy": 41], "the copy was made again from the new score")
    }

    func testAStubThatReadADocumentNoStubWroteIsReplayedWhenTheServerChangesIt() throws {
        let harness = connected()
        try harness.client.call("copyScore", params: ["p0", "p1"]) { _ in }
        XCTAssertEqual(fields(harness, "p1"), ["score": 0, "copy": 0])
        let recorder = ChangesRecorder(harness.client.database)
        harness.receive(.changed(collection: "players", id: "p0", fields: ["score": 40], cleared: []))
        harness.flushData()
        XCTAssertEqual(fields(harness, "p0"), ["score": 40])
        XCTAssertEqual(fields(harness, "p1"), ["score": 0, "copy": 40])
        XCTAssertEqual(recorder.changes.count, 1, "the server's change and the replay in one transaction")
    }

    func testAStubThatReadAWholeCollectionIsReplayedWhenAnyOfItsDocumentsChanges() throws {
        let harness = connected()
        try harness.client.call("countPlayers") { _ in }
        XCTAssertEqual(harness.document("meta", "stats")?["players"], 2)
        harness.receive(.added(collection: "players", id: "p9", fields: ["score": 0]))
        harness.flushData()
        XCTAssertEqual(harness.document("meta", "stats")?["players"], 3)
        harness.receive(.removed(collection: "players", id: "p0"))
        harness.receive(.removed(collection: "players", id: "p1"))
        harness.flushData()
        XCTAssertEqual(harness.document("meta", "stats")?["players"], 1)
    }

    func testAReplayThatWritesAnotherDocumentReplaysItsOtherWritersInCallOrder() throws {
        let harness = connected()
        // `mark` writes the player the pointer names (p0 now), then `markP1` writes p1.
        try harness.client.call("mark", params: ["first"]) { _ in }
        try harness.client.call("markP1", params: ["second"]) { _ in }
        XCTAssertEqual(fields(harness, "p0"), ["score": 0, "mark": "first"])
        XCTAssertEqual(fields(harness, "p1"), ["score": 0, "mark": "second"])
        // The pointer moves to p1: replayed in order, `mark` writes p1 first and `markP1` after it.
        harness.receive(.changed(collection: "meta", id: "pointer", fields: ["target": "p1"], cleared: []))
        harness.flushData()
        XCTAssertEqual(fields(harness, "p0"), ["score": 0], "back to the server's version")
        XCTAssertEqual(fields(harness, "p1"), ["score": 0, "mark": "second"], "the later call's write is on top")
        // Both calls done: the server's versions.
        harness.receive(.updated(methodIDs: ["1", "2"]))
        harness.flushData()
        XCTAssertEqual(fields(harness, "p1"), ["score": 0])
    }
}
