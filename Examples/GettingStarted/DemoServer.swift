import DDPTestServer
import Foundation
import MeteorDDP

/// The server the walk-through expects, embedded: players, Ada's account, `players.add` and a `players.reset` that
/// refuses (a Meteor app's `throw new Meteor.Error('not-allowed', …)`).
enum DemoServer {
    static func start() async throws -> DDPTestServer {
        let server = DDPTestServer()
        try await server.start()
        server.createUser(email: "ada@example.com", password: "correct horse")
        server.perform {
            let players = server.collection("players")
            for (index, name) in ["Ada Lovelace", "Marie Curie", "Carl Gauss", "Claude Shannon"].enumerated() {
                // EJSONObject named with `import MeteorDDP` alone (it re-exports EJSON).
                let player: EJSONObject = ["name": .string(name), "score": .number(Double(5 * index))]
                _ = try? players.insert(player, id: "p\(index)")
            }
        }
        server.publish("players") { _ in [Cursor(collection: "players")] }
        server.method("players.add") { context in
            guard let name = context.params.first?.stringValue,
                case .number(let score)? = context.params.dropFirst().first
            else {
                throw MeteorError(error: .number(400), reason: "Match failed")
            }
            let id = context.randomID(forSequence: "/collection/players")
            return .string(
                try context.collection("players").insert(["name": .string(name), "score": .number(score)], id: id))
        }
        server.method("players.reset") { _ in
            throw MeteorError(error: .string("not-allowed"), reason: "Only an admin may reset the scores")
        }
        return server
    }
}
