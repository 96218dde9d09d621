import EJSON
import Foundation
import XCTest

@testable import MeteorDDP

/// Replays one scenario of Meteor's own transcripts (Tests/MeteorDDPTests/Fixtures/ddp_transcripts.json) against the
/// client: server frames are delivered as recorded, every frame the client sends is compared with Meteor's, and the
/// client-side actions the transcript describes in its notes are performed when their note comes up.
///
/// Values Meteor drew from its (reseeded) random generator are normalised: subscription ids are matched by order of
/// appearance, and a `randomSeed` must be present exactly when Meteor sent one.
final class TranscriptPlayer {
    let harness: ClientHarness
    private let steps: [[String: Any]]
    private var consumedFrames = 0
    private var subscriptionIDs: [String: String] = [:]
    /// Meteor's subscription ids mapped to ours, learned from the `sub` frames compared so far.
    private var ourSubscriptionID: [String: String] = [:]
    let file: StaticString
    let line: UInt

    init(_ scenario: String, harness: ClientHarness, file: StaticString = #filePath, line: UInt = #line) throws {
        let root = try XCTUnwrap(Fixtures.json("ddp_transcripts") as? [String: Any])
        let scenarios = try XCTUnwrap(root["scenarios"] as? [[String: Any]])
        let found = try XCTUnwrap(scenarios.first { $0["name"] as? String == scenario }, "no scenario \(scenario)")
        self.steps = try XCTUnwrap(found["steps"] as? [[String: Any]])
        self.harness = harness
        self.file = file
        self.line = line
    }

    /// Plays every step; `actions` maps a prefix of a note to what the client does at that point.
    func play(actions: [String: () throws -> Void]) throws {
        var performed = Set<String>()
        for step in steps {
            if let note = step["note"] as? String {
                for (prefix, action) in actions where note.hasPrefix(prefix) && !performed.contains(prefix) {
                    performed.insert(prefix)
                    try action()
                    harness.settle()
                }
            } else if let direction = step["dir"] as? String, let frame = step["frame"] as? String {
                if direction == "S->C" {
                    var translated = frame
                    for (meteor, ours) in ourSubscriptionID {
                        translated = translated.replacingOccurrences(of: meteor, with: ours)
                    }
                    harness.receive(frame: translated)
                    harness.flushData()
                } else {
                    harness.flushData()
                    expectSent(frame)
                }
            }
        }
        XCTAssertEqual(Set(actions.keys), performed, "every action's note was found", file: file, line: line)
    }

    private func expectSent(_ expected: String) {
        let sent = harness.transport.sentFrames
        guard consumedFrames < sent.count else {
            XCTFail("expected the client to send \(expected), it sent nothing more", file: file, line: line)
            return
        }
        let actual = sent[consumedFrames]
        consumedFrames += 1
        if let ours = try? EJSON.parse(actual), let meteor = try? EJSON.parse(expected), ours["msg"] == "sub",
            meteor["msg"] == "sub",
            let ourID = ours["id"]?.stringValue, let meteorID = meteor["id"]?.stringValue
        {
            ourSubscriptionID[meteorID] = ourID
        }
        XCTAssertEqual(
            normalise(actual, ours: true), normalise(expected, ours: false), "sent frame #\(consumedFrames)",
            file: file, line: line)
    }

    /// Replaces random values: sub ids by their order of appearance, randomSeed by a marker.
    private func normalise(_ frame: String, ours: Bool) -> String {
        guard case .object(var object)? = try? EJSON.parse(frame) else { return frame }
        if object["randomSeed"] != nil { object["randomSeed"] = "<seed>" }
        if let message = object["msg"]?.stringValue, message == "sub" || message == "unsub",
            let id = object["id"]?.stringValue
        {
            let key = (ours ? "ours:" : "meteor:") + id
            if subscriptionIDs[key] == nil {
                subscriptionIDs[key] =
                    "<sub\(subscriptionIDs.count(where: { $0.key.hasPrefix(ours ? "ours:" : "meteor:") }) + 1)>"
            }
            object["id"] = .string(subscriptionIDs[key]!)
        }
        return EJSON.stringify(.object(object))
    }
}
