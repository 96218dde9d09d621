import EJSON
import XCTest

@testable import MeteorDDP

/// Typed collections, typed live queries (decoding once per document version) and typed method calls.
final class TypedCollectionTests: XCTestCase {
    struct Player: Codable, Sendable, Equatable {
        var _id: String?
        var name: String
        var score: Int
    }

    private func connectedWithPlayers(_ count: Int = 3) -> ClientHarness {
        let harness = ClientHarness()
        harness.establishConnection()
        for i in 0..<count {
            harness.receive(
                .added(
                    collection: "players", id: "p\(i)",
                    fields: ["name": .string("player \(i)"), "score": .number(Double(i))]))
        }
        harness.flushData()
        return harness
    }

    func testReadsDecodeModels() throws {
        let harness = connectedWithPlayers()
        let players = harness.client.collection("players", as: Player.self)
        XCTAssertEqual(try players.document(id: "p1"), Player(_id: "p1", name: "player 1", score: 1))
        XCTAssertEqual(
            try players.find(["score": ["$gte": 1]], FindOptions(sort: ["score": -1])).map(\.name),
            ["player 2", "player 1"])
        XCTAssertEqual(try players.findOne([:], FindOptions(sort: ["score": 1]))?._id, "p0")
        struct Wrong: Codable, Sendable { var missing: Int }
        XCTAssertThrowsError(try harness.client.collection("players", as: Wrong.self).find()) {
            XCTAssertTrue($0 is DecodingError, "\($0)")
        }
    }

    func testATypedInsertEncodesTheModelAndItsStubShowsItAtOnce() async throws {
        let harness = connectedWithPlayers(0)
        let players = harness.client.collection("players", as: Player.self)
        let task = Task { try await players.insert(Player(_id: "ada", name: "Ada", score: 36)) }
        await harness.transport.waitUntilSent(count: 1) { if case .method = $0 { true } else { false } }
        XCTAssertEqual(try players.document(id: "ada"), Player(_id: "ada", name: "Ada", score: 36))
        guard case .method(let id, "/players/insert", let params, _)? = harness.sent.last else {
            return XCTFail("no insert")
        }
        XCTAssertEqual(params, [["_id": "ada", "name": "Ada", "score": 36]])
        harness.receive(.added(collection: "players", id: "ada", fields: ["name": "Ada", "score": 36]))
        harness.receive(.result(id: id, result: "ada", error: nil))
        harness.receive(.updated(methodIDs: [id]))
        harness.flushData()
        let inserted = try await value(of: task, within: 5)
        XCTAssertEqual(inserted, "ada")
    }

    func testATypedLiveQueryDecodesOnlyTheDocumentsThatChanged() async throws {
        let harness = connectedWithPlayers(1_000)
        let live = try harness.client.collection("players", as: Player.self).observe(
            [:], FindOptions(sort: ["score": -1]))
        var snapshots = live.snapshots.makeAsyncIterator()
        let first = try await snapshots.next()
        XCTAssertEqual(first?.values.count, 1_000)
        XCTAssertEqual(first?.values.first?.name, "player 999")
        XCTAssertEqual(live.decodeCount, 1_000)

        harness.receive(.changed(collection: "players", id: "p10", fields: ["score": 5_000], cleared: []))
        harness.flushData()
        let second = try await snapshots.next()
        XCTAssertEqual(second?.values.first, Player(_id: "p10", name: "player 10", score: 5_000))
        XCTAssertEqual(second?.diff.moved.count, 1)
        XCTAssertEqual(live.decodeCount, 1_001, "one changed document, one decode")
        live.stop()
    }

    func testAProjectedTypedLiveQueryStillDecodesOnlyWhatChanged() async throws {
        struct Name: Codable, Sendable { var name: String }
        let harness = connectedWithPlayers(100)
        let live = try harness.client.collection("players", as: Name.self).observe(
            [:], FindOptions(sort: ["score": -1], fields: ["name": 1]))
        var snapshots = live.snapshots.makeAsyncIterator()
        _ = try await snapshots.next()
        XCTAssertEqual(live.decodeCount, 100)
        harness.receive(.changed(collection: "players", id: "p3", fields: ["name": "renamed"], cleared: []))
        harness.flushData()
        let second = try await snapshots.next()
        XCTAssertTrue(second?.values.contains { $0.name == "renamed" } == true)
        XCTAssertEqual(
            live.decodeCount, 101, "a projection makes new document objects; equal ones are not decoded again")
        live.stop()
    }

    func testTypedCallsEncodeParamsAndDecodeResultsAndErrorDetails() async throws {
        let harness = connectedWithPlayers(0)
        let client = harness.client
        struct Scored: Codable, Sendable, Equatable {
            var player: String
            var points: Int
        }
        let task = Task {
            try await client.call("players.score", Scored(player: "ada", points: 3), 2, returning: Scored.self)
        }
        await harness.transport.waitUntilSent(count: 1) { if case .method = $0 { true } else { false } }
        guard case .method(let id, "players.score", let params, _)? = harness.sent.last else {
            return XCTFail("no call")
        }
        XCTAssertEqual(params, [["player": "ada", "points": 3], 2])
        harness.receive(.result(id: id, result: ["player": "ada", "points": 6], error: nil))
        harness.receive(.updated(methodIDs: [id]))
        let result = try await value(of: task, within: 5)
        XCTAssertEqual(result, Scored(player: "ada", points: 6))

        struct Details: Codable, Equatable { var field: String }
        let failing = Task { try await client.call("players.score", "bad", returning: Int?.self) }
        await harness.transport.waitUntilSent(count: 2) { if case .method = $0 { true } else { false } }
        guard case .method(let secondID, _, _, _)? = harness.sent.last else { return XCTFail("no call") }
        harness.receive(
            .result(
                id: secondID, result: nil,
                error: MeteorError(error: .string("validation-error"), reason: "bad", details: ["field": "player"])))
        harness.receive(.updated(methodIDs: [secondID]))
        do {
            _ = try await value(of: failing, within: 5)
            XCTFail("the call succeeded")
        } catch let error as MeteorError {
            XCTAssertEqual(try error.details(as: Details.self), Details(field: "player"))
        }
    }
}
