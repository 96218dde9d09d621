import XCTest

@testable import MeteorDDP

/// RandomStream and makeRpcSeed against vectors from Meteor's `ddp-common/random_stream.js`.
final class RandomStreamTests: XCTestCase {
    private func root() throws -> [String: Any] {
        try XCTUnwrap(Fixtures.json("random_stream") as? [String: Any])
    }

    func testNamedSequencesMatchMeteorIDForID() throws {
        let perSeed = try XCTUnwrap(root()["perSeed"] as? [[String: Any]])
        XCTAssertFalse(perSeed.isEmpty)
        for entry in perSeed {
            let seed = try XCTUnwrap(entry["seed"] as? String)
            let stream = RandomStream(seed: seed)
            for (scope, value) in try XCTUnwrap(entry["scopes"] as? [String: [String: Any]]) {
                let ids = try XCTUnwrap(value["ids"] as? [String])
                XCTAssertEqual(ids.map { _ in stream.id(forSequence: scope) }, ids, "seed \(seed) scope \(scope)")
            }
        }
    }

    func testAnEmptyNameMeansDefaultForAnInvocationsRandomStream() throws {
        let expected =
            try XCTUnwrap(root()["randomStreamGet"] as? [String: Any])["get({randomSeed:\"seed1\"}, \"\").id()"]
            as? String
        XCTAssertEqual(RandomStream(seed: "seed1").id(forSequence: "default"), expected)
        let context = MethodInvocationContext(methodName: "m", params: [], enclosing: nil, client: nil)
        let stream = RandomStream(seed: context.randomSeed)
        XCTAssertEqual(context.randomID(forSequence: ""), stream.id(forSequence: "default"))
    }

    func testMakeRpcSeedContinuesPerMethodNameInTheEnclosingStream() throws {
        let cases = try XCTUnwrap(root()["makeRpcSeed"] as? [[String: Any]])
        for testCase in cases {
            let enclosing = RandomStream(seed: try XCTUnwrap(testCase["enclosingSeed"] as? String))
            for call in try XCTUnwrap(testCase["callsInOrder"] as? [[String: String]]) {
                XCTAssertEqual(
                    RandomStream.makeRpcSeed(enclosing: enclosing, methodName: call["method"]!), call["seed"])
            }
        }
    }

    func testTopLevelSeedsAreTwentySecureHexDigits() {
        let seeds = (0..<50).map { _ in RandomStream.makeRpcSeed(enclosing: nil, methodName: "m") }
        XCTAssertTrue(seeds.allSatisfy { $0.count == 20 && $0.allSatisfy(\.isHexDigit) })
        XCTAssertEqual(Set(seeds).count, 50)
    }

    func testHexStringForSequenceAdvancesTheSameSequence() {
        let stream = RandomStream(seed: "s")
        let reference = Alea(seeds: ["s", "x"])
        XCTAssertEqual(stream.hexString(forSequence: "x", digits: 4), reference.hexString(4))
        XCTAssertEqual(stream.id(forSequence: "x"), reference.id())
    }

    func testConcurrentUseKeepsEverySequenceConsistent() {
        let stream = RandomStream(seed: "concurrent")
        let ids = NSLockedArray()
        DispatchQueue.concurrentPerform(iterations: 400) { _ in ids.append(stream.id(forSequence: "/collection/x")) }
        let reference = RandomStream(seed: "concurrent")
        XCTAssertEqual(Set(ids.values), Set((0..<400).map { _ in reference.id(forSequence: "/collection/x") }))
    }
}
