import XCTest

@testable import MeteorDDP

/// Password digests against Meteor's `Accounts._hashPassword` (Tests/MeteorDDPTests/Fixtures/password.json).
final class MeteorPasswordTests: XCTestCase {
    func testDigestsMatchMeteorIncludingCharactersOutsideTheBasicPlane() throws {
        let root = try XCTUnwrap(Fixtures.json("password") as? [String: Any])
        let cases = try XCTUnwrap((root["digest"] as? [String: Any])?["cases"] as? [[String: Any]])
        XCTAssertGreaterThanOrEqual(cases.count, 5)
        for testCase in cases {
            let password = try XCTUnwrap(testCase["password"] as? String)
            let expected = try XCTUnwrap((testCase["hashPassword"] as? [String: Any])?["digest"] as? String)
            XCTAssertEqual(
                MeteorPassword.digest(password), expected,
                "password \(password.unicodeScalars.map { String($0.value, radix: 16) })")
        }
    }

    func testAstralCharactersAreHashedAsTwoSurrogateSequencesLikeMeteorsSha256js() {
        // Expected values computed independently (Python hashlib over the CESU-8 bytes, and over UTF-8).
        let cesu8 = "3aeb83170da032c6fb131b049cb05abb013390de49a7b6586dfa02c17fafa213"
        let utf8 = "c059d5121c4e4a158656fcc83244b2400842663a4aeb363bb0c86f500f48bd95"
        XCTAssertEqual(MeteorPassword.digest("p\u{1F511}ß"), cesu8)
        XCTAssertNotEqual(MeteorPassword.digest("p\u{1F511}ß"), utf8)
    }

    func testDigestIsSixtyFourLowercaseHexDigits() {
        let digest = MeteorPassword.digest("")
        XCTAssertEqual(digest, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(MeteorPassword.algorithm, "sha-256")
    }
}
