// The README's walk-through is this file from "walk-through: begin" to "walk-through: end" (a test compares them),
// and IntegrationTests run it against DDPTestServer.

// walk-through: begin
import Foundation
import MeteorDDP

struct Player: Codable, Sendable {
    var _id: String?
    var name: String
    var score: Int
}

func walkthrough(url: URL) async throws {
    let client = DDPClient(url: url)
    defer { client.close() }

    // Connect with a deadline: a wrong URL or an unreachable server throws with the reason instead of waiting.
    try await client.connect(timeout: .seconds(10))

    // Log in: a wait method (nothing runs beside it), resumed first after every reconnect.
    try await client.login(email: "ada@example.com", password: "correct horse")

    // Subscribe and wait for the data (shared with every other subscribe of the same name and params).
    try await client.subscribe("players").ready()

    // Typed finds: Mongo selectors and options as in JavaScript, read from the cache and decoded.
    let players = client.collection("players", as: Player.self)
    let leaders = try players.find(["score": ["$gte": 10]], FindOptions(sort: ["score": -1]))
    print("10 points or more:", leaders.map(\.name))

    // A live query of the top three: each snapshot with its index diffs (a change decodes one document).
    let topThree = try players.observe([:], FindOptions(sort: ["score": -1, "name": 1], limit: 3))
    let watching = Task {
        for try await snapshot in topThree.snapshots { print("top three:", snapshot.values.map(\.name), snapshot.diff) }
    }
    defer { watching.cancel() }

    // A typed stub runs at once, in the cache. Its id comes from the call's random seed, so it equals the server's.
    client.defineStub("players.add") { (context, name: String, score: Int) -> String? in
        try context.collection("players", as: Player.self).insert(Player(name: name, score: score))
    }

    // As Meteor 3's callAsync: the stub's value at once, the server's result after `result` and `updated`.
    let call = client.callAsync("players.add", "Grace Hopper", 40, returning: String.self)
    print("shown at once as", try await call.stubValue ?? "?")
    print("confirmed by the server as", try await call.value)

    // A server's refusal is a MeteorError, whatever raised it (a call, a collection write, a login, a subscription).
    // JavaScript: try { … } catch (e) { if (e.error === 'not-allowed') console.log(e.reason) }
    do {
        _ = try await client.call("players.reset")
    } catch let error as MeteorError where error.error == "not-allowed" {
        print("refused:", error.reason ?? "")
    }
}
// walk-through: end
