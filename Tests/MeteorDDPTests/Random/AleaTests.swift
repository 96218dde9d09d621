import XCTest

@testable import MeteorDDP

/// Alea against the vectors produced by Meteor's own `AleaRandomGenerator` (Tests/MeteorDDPTests/Fixtures/alea.json).
final class AleaTests: XCTestCase {
    private struct Case {
        let seeds: [String]
        let raw: [String: Any]
    }

    private func cases() throws -> [Case] {
        let root = try XCTUnwrap(Fixtures.json("alea") as? [String: Any])
        let cases = try XCTUnwrap(root["cases"] as? [[String: Any]])
        return try cases.map { Case(seeds: try XCTUnwrap($0["seedStrings"] as? [String]), raw: $0) }
    }

    private func bits(_ entry: Any) throws -> UInt64 {
        let hex = try XCTUnwrap((entry as? [String: Any])?["bits"] as? String)
        return try XCTUnwrap(UInt64(hex, radix: 16))
    }

    func testFractionsMatchMeteorBitForBit() throws {
        let cases = try cases()
        XCTAssertGreaterThan(cases.count, 5)
        for testCase in cases {
            let alea = Alea(seeds: testCase.seeds)
            let expected = try XCTUnwrap(testCase.raw["fractions"] as? [Any])
            for (index, entry) in expected.enumerated() {
                XCTAssertEqual(
                    alea.fraction().bitPattern, try bits(entry), "seeds \(testCase.seeds), fraction \(index)")
            }
        }
    }

    func testIDsSecretsAndHexStringsMatchMeteor() throws {
        for testCase in try cases() {
            let seeds = testCase.seeds
            XCTAssertEqual(Alea(seeds: seeds).id(), testCase.raw["id"] as? String, "id \(seeds)")
            XCTAssertEqual(Alea(seeds: seeds).id(5), testCase.raw["id5"] as? String, "id5 \(seeds)")
            XCTAssertEqual(Alea(seeds: seeds).id(1), testCase.raw["id1"] as? String, "id1 \(seeds)")
            XCTAssertEqual(Alea(seeds: seeds).hexString(20), testCase.raw["hexString20"] as? String, "hex20 \(seeds)")
            XCTAssertEqual(Alea(seeds: seeds).hexString(24), testCase.raw["hexString24"] as? String, "hex24 \(seeds)")
            XCTAssertEqual(Alea(seeds: seeds).hexString(1), testCase.raw["hexString1"] as? String, "hex1 \(seeds)")
            XCTAssertEqual(Alea(seeds: seeds).secret(), testCase.raw["secret"] as? String, "secret \(seeds)")
            XCTAssertEqual(Alea(seeds: seeds).secret(10), testCase.raw["secret10"] as? String, "secret10 \(seeds)")
        }
    }

    func testUint32AndFract53MatchMeteor() throws {
        for testCase in try cases() {
            let uint32 = Alea(seeds: testCase.seeds)
            for entry in try XCTUnwrap(testCase.raw["uint32"] as? [Any]) {
                XCTAssertEqual(uint32.uint32().bitPattern, try bits(entry), "uint32 \(testCase.seeds)")
            }
            let fract53 = Alea(seeds: testCase.seeds)
            for entry in try XCTUnwrap(testCase.raw["fract53"] as? [Any]) {
                XCTAssertEqual(fract53.fract53().bitPattern, try bits(entry), "fract53 \(testCase.seeds)")
            }
        }
    }

    func testSuccessiveCallsOnOneGeneratorMatchMeteorsSequence() throws {
        for testCase in try cases() {
            let alea = Alea(seeds: testCase.seeds)
            for step in try XCTUnwrap(testCase.raw["sequence"] as? [[String: Any]]) {
                let call = try XCTUnwrap(step["call"] as? String)
                let expected: String
                if let text = step["result"] as? String {
                    expected = text
                } else {
                    expected = String(try bits(try XCTUnwrap(step["result"])), radix: 16)
                }
                XCTAssertEqual(try perform(call, on: alea), expected, "\(call) on \(testCase.seeds)")
            }
        }
    }

    private func perform(_ call: String, on alea: Alea) throws -> String {
        let name = String(call.prefix { $0 != "(" })
        let argument = Int(call.drop { $0 != "(" }.dropFirst().dropLast())
        switch name {
        case "id": return alea.id(argument ?? 17)
        case "secret": return alea.secret(argument ?? 43)
        case "hexString": return alea.hexString(argument ?? 0)
        case "fraction": return String(alea.fraction().bitPattern, radix: 16)
        case "choice":
            let list = String(call.drop { $0 != "[" }.dropFirst().prefix { $0 != "]" })
            return alea.choice(list.split(separator: ",").map { String($0.dropFirst().dropLast()) }) ?? ""
        default: throw XCTSkip("call \(call) not modelled")
        }
    }

    func testMeteorsOwnRandomTestIDs() {
        let alea = Alea(seeds: ["0"])
        XCTAssertEqual(
            (0..<4).map { _ in alea.id() },
            ["cp9hWvhg8GSvuZ9os", "3f3k6Xo7rrHCifQhR", "shxDnjWWmnKPEoLhM", "6QTjB8C5SEqhmz4ni"])
    }

    func testMeteorIOSReadmeFractions() {
        let alea = Alea(seeds: ["my", "3", "seeds"])
        XCTAssertEqual(
            [alea.fraction(), alea.fraction(), alea.fraction()],
            [0.30802189325913787, 0.5190450621303171, 0.43635262292809784])
        let fract53 = Alea(seeds: [""])
        XCTAssertEqual(
            [fract53.fract53(), fract53.fract53(), fract53.fract53()],
            [0.16665777435687268, 0.00011322738143160205, 0.17695781631176488])
        let uint32 = Alea(seeds: [""])
        XCTAssertEqual([uint32.uint32(), uint32.uint32(), uint32.uint32()], [715_789_690, 2_091_287_642, 486307])
    }

    func testChoiceDrawsOneFractionPerPick() {
        let a = Alea(seeds: ["abc"])
        let b = Alea(seeds: ["abc"])
        let picked = a.choice(["red", "green", "blue"])
        let index = Int(b.fraction() * 3)
        XCTAssertEqual(picked, ["red", "green", "blue"][index])
        XCTAssertEqual(a.fraction(), b.fraction(), "exactly one fraction consumed")
        XCTAssertNil(a.choice([Int]()))
    }

    func testSecureGeneratorProducesWellFormedIDsAndSeeds() {
        let generator = SecureRandomGenerator()
        let alphabet = Set("23456789ABCDEFGHJKLMNPQRSTWXYZabcdefghijkmnopqrstuvwxyz")
        let ids = (0..<100).map { _ in generator.id() }
        XCTAssertTrue(ids.allSatisfy { $0.count == 17 && $0.allSatisfy(alphabet.contains) })
        XCTAssertEqual(Set(ids).count, 100)
        let seed = generator.hexString(20)
        XCTAssertTrue(seed.count == 20 && seed.allSatisfy(\.isHexDigit))
        XCTAssertTrue((0..<1000).map { _ in generator.fraction() }.allSatisfy { $0 >= 0 && $0 < 1 })
        // Drawn in one request: every fraction in [0, 1), all different, spread over the interval (mean 0.5, σ ≈
        // 0.009).
        let fractions = generator.fractions(1000)
        XCTAssertEqual(fractions.count, 1000)
        XCTAssertTrue(fractions.allSatisfy { $0 >= 0 && $0 < 1 })
        XCTAssertEqual(Set(fractions).count, 1000)
        XCTAssertEqual(fractions.reduce(0, +) / 1000, 0.5, accuracy: 0.1)
        XCTAssertEqual(generator.fractions(0), [])
    }
}
