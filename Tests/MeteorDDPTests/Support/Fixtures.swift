import EJSON
import Foundation

@testable import MeteorDDP

/// Loads the golden vectors copied from ../shared/reference/meteor-vectors into Tests/MeteorDDPTests/Fixtures.
enum Fixtures {
    static func json(_ name: String) throws -> Any {
        let url = try XCTUnwrapURL(
            Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures"), name)
        return try JSONSerialization.jsonObject(with: Data(contentsOf: url))
    }

    // swift-format-ignore: AlwaysUseLowerCamelCase
    private static func XCTUnwrapURL(_ url: URL?, _ name: String) throws -> URL {
        guard let url else { throw FixtureMissing(name: name) }
        return url
    }

    struct FixtureMissing: Error { let name: String }

    /// Every frame of the DDP transcripts, with its direction and scenario name.
    static func transcriptFrames() throws -> [(scenario: String, direction: String, frame: String)] {
        let root = try json("ddp_transcripts") as? [String: Any]
        let scenarios = root?["scenarios"] as? [[String: Any]] ?? []
        var frames: [(String, String, String)] = []
        for scenario in scenarios {
            let name = scenario["name"] as? String ?? "?"
            for step in scenario["steps"] as? [[String: Any]] ?? [] {
                if let direction = step["dir"] as? String, let frame = step["frame"] as? String {
                    frames.append((name, direction, frame))
                }
            }
        }
        return frames
    }
}

extension Database {
    /// Three players by score (lovelace 25, turing 15, gauss 5): the live-query tests' starting point.
    static func seededPlayers() -> Database {
        let database = Database()
        let key = { DocumentKey(collectionName: "players", documentID: $0) }
        database.apply([
            .added(key("lovelace"), ["score": 25]),
            .added(key("gauss"), ["score": 5]),
            .added(key("turing"), ["score": 15])
        ])
        return database
    }
}
