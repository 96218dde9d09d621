import EJSON
import TestSupport
import XCTest

@testable import MeteorDDP

/// A stub must survive any call: parameters read safely, typed parameters decoded, a stub's error handled as Meteor's
/// client handles it (logged, the call still goes out; `throwStubExceptions` makes it the caller's).
final class StubParameterTests: XCTestCase {
    private struct Player: Codable, Sendable, Equatable {
        var _id: String?
        var name: String
        var score: Int
    }

    /// The README's old pattern `context.params[0]` trapped on a call with fewer parameters (a crash of the app).
    func testReadingAParameterTheCallDidNotPassGivesNil() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let seen = Locked<[String]>([])
        harness.client.defineStub("addPlayer") { context in
            seen.mutate { $0.append(context.params[0] == nil ? "absent" : "present") }
            seen.mutate { $0.append("count \(context.params.count), third \(String(describing: context.params[2]))") }
            return nil
        }
        _ = try harness.client.call("addPlayer") { _ in }
        harness.settle()
        XCTAssertEqual(seen.value, ["absent", "count 0, third nil"])
        XCTAssertEqual(
            harness.sent.last, .method(id: "1", method: "addPlayer", params: [], randomSeed: nil),
            "the call still goes out")
    }

    func testATypedStubDecodesItsParametersAndWritesATypedCollectionWithTheServersID() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        harness.client.defineStub("players.add") { (context, name: String, score: Int?) -> String? in
            try context.collection("players", as: Player.self).insert(Player(name: name, score: score ?? 0))
        }
        let call = harness.client.callAsync("players.add", params: ["Ada"])
        harness.settle()
        guard case .method(_, _, _, let seed?) = harness.sent.last else { return XCTFail("randomSeed sent") }
        let id = RandomStream(seed: seed).id(forSequence: "/collection/players")
        let stored = try harness.client.collection("players", as: Player.self).document(id: id)
        XCTAssertEqual(
            stored, Player(_id: id, name: "Ada", score: 0), "decoded: an absent optional is nil; the id is the server's"
        )
        _ = call
    }

    /// A missing or mistyped parameter stops the stub before it runs; the error is logged and the call still goes out.
    func testAMistypedParameterIsLoggedAndTheCallStillGoesOut() throws {
        let log = LogRecorder()
        let harness = ClientHarness { $0.logger = log.logger }
        harness.establishConnection()
        let ran = Locked(false)
        harness.client.defineStub("players.add") { (context, name: String) in ran.mutate { $0 = true } }
        _ = try harness.client.call("players.add", params: [42]) { _ in }
        harness.settle()
        XCTAssertFalse(ran.value)
        XCTAssertEqual(harness.sent.last, .method(id: "1", method: "players.add", params: [42], randomSeed: nil))
        XCTAssertTrue(
            log.lines.contains {
                $0.contains("Exception while simulating the effect of invoking 'players.add'")
                    && $0.contains("parameter 0 is not a String")
            },
            log.lines.joined(separator: "\n"))
    }

    func testWithThrowStubExceptionsTheCallerGetsTheTypedParameterErrorAndNothingIsSent() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        harness.client.defineStub("players.add") { (context, name: String, score: Int) in }
        let sentBefore = harness.sent.count
        XCTAssertThrowsError(
            try harness.client.call("players.add", params: ["Ada"], options: MethodOptions(throwStubExceptions: true)) {
                _ in
            }
        ) { error in
            guard let error = error as? MethodError, error.kind == .stubFailed,
                let parameter = error.stubError as? MethodParameterError
            else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual(parameter.position, 1)
            XCTAssertEqual(parameter.methodName, "players.add")
            XCTAssertNil(parameter.passed)
            XCTAssertEqual(
                parameter.description,
                "method 'players.add': parameter 1 is not a Int (the call passed only 1 parameter)")
        }
        harness.settle()
        XCTAssertEqual(harness.sent.count, sentBefore)
    }

    func testParametersDecodeOneByOne() throws {
        let params: MethodParameters = ["Ada", 3, ["name": "x", "score": 1]]
        XCTAssertEqual(try params.decode(String.self, at: 0), "Ada")
        XCTAssertEqual(try params.decode(Int.self, at: 1), 3)
        XCTAssertEqual(try params.decode(Player.self, at: 2), Player(name: "x", score: 1))
        XCTAssertNil(try params.decode(Int?.self, at: 7))
        XCTAssertThrowsError(try params.decode(Int.self, at: 0))
    }
}
