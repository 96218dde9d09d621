import DDPTestServer
import EJSON
import Foundation
import MeteorDDP

// swift run leaderboard — players and scores; a live query of the top three shows its index diffs as scores change.
// An embedded DDP server on 127.0.0.1 serves the players; the client gives points through a stubbed method.

let server = DDPTestServer()
try await server.start()
server.perform {
    let players = server.collection("players")
    for (index, name) in ["Ada Lovelace", "Grace Hopper", "Marie Curie", "Carl Gauss", "Nikola Tesla", "Claude Shannon"]
        .enumerated()
    {
        _ = try? players.insert(["name": .string(name), "score": .number(Double(5 * index))], id: "p\(index)")
    }
}
server.publish("players") { _ in [Cursor(collection: "players")] }
server.method("players.givePoints") { context in
    guard let id = context.params.first?.stringValue, let points = context.params.dropFirst().first else { return nil }
    return .number(Double(try context.collection("players").update(id, ["$inc": ["score": points]])))
}

let client = DDPClient(url: server.url)
client.defineStub("players.givePoints") { (context, id: String, points: Int) -> Int in
    try context.collection("players").update(id, ["$inc": ["score": .number(Double(points))]])
}
try await client.connect(timeout: .seconds(10))
try await client.subscribe("players").ready()

/// A player as the app sees it: decoded once per document version by the typed live query.
struct Player: Codable, Sendable {
    var _id: String
    var name: String
    var score: Int
}

let leaders = try client.collection("players", as: Player.self).observe([:], FindOptions(sort: ["score": -1], limit: 3))
let printer = Task {
    for try await snapshot in leaders.snapshots {
        let board = snapshot.values.enumerated().map { "\($0.offset + 1). \($0.element.name) (\($0.element.score))" }
        print("top 3: " + board.joined(separator: "  ") + "  [decoded so far: \(leaders.decodeCount)]")
        if !snapshot.diff.isEmpty {
            let moves = snapshot.diff.moved.map { "\($0.from)→\($0.to)" }
            print(
                "  diff: inserted \(snapshot.diff.inserted) removed \(snapshot.diff.removed) "
                    + "moved \(moves) updated \(snapshot.diff.updated)"
            )
        }
    }
}

for (player, points) in [("p0", 30), ("p1", 3), ("p5", 1), ("p2", 20), ("p4", 2)] {
    print("> give \(points) points to \(player)")
    let changed = try await client.call("players.givePoints", player, points, returning: Int.self)
    precondition(changed == 1)
}
client.database.notificationQueue.sync {}
leaders.stop()
printer.cancel()
client.close()
try await server.stop()
