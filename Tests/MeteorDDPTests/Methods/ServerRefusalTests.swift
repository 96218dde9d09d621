import EJSON
import TestSupport
import XCTest

@testable import MeteorDDP

/// A server's refusal is caught one way whatever raised it, as Meteor's JavaScript catches a `Meteor.Error`:
/// `catch (e) { if (e.error === 'test-error') … e.reason … e.details }`.
final class ServerRefusalTests: XCTestCase {
    private struct Details: Codable, Equatable { var field: String }
    private static let refusal = MeteorError(error: "test-error", reason: "refused", details: ["field": "name"])

    /// What `body` throws once the server refuses the method it sent (its `count`th).
    private func refusal(
        _ harness: ClientHarness, method count: Int, _ body: @escaping @Sendable () async throws -> Void
    ) async throws -> MeteorError? {
        let task = Task { try await body() }
        await harness.transport.waitUntilSent(count: count) { if case .method = $0 { true } else { false } }
        harness.receive(.result(id: String(count), result: nil, error: Self.refusal))
        harness.receive(.updated(methodIDs: [String(count)]))
        do {
            try await withTimeout(5, "refusal") { try await task.value }
            return nil
        } catch let error as MeteorError {
            return error
        }
    }

    func testEveryServerRefusalIsAMeteorErrorWithItsCodeReasonAndDetails() async throws {
        struct Player: Codable, Sendable {
            var _id: String?
            var name: String
        }
        let harness = ClientHarness()
        harness.establishConnection()
        let client = harness.client
        let refusals = [
            try await refusal(harness, method: 1) { _ = try await client.call("players.add", params: ["Ada"]) },
            try await refusal(harness, method: 2) {
                _ = try await client.call("players.add", "Ada", returning: String?.self)
            },
            try await refusal(harness, method: 3) {
                _ = try await client.callAsync("players.add", params: ["Ada"]).value
            },
            try await refusal(harness, method: 4) {
                _ = try await client.collection("players", as: Player.self).insert(Player(name: "Ada"))
            },
            try await refusal(harness, method: 5) {
                _ = try await client.login(email: "ada@example.com", password: "wrong")
            }
        ]
        for (index, error) in refusals.enumerated() {
            let error = try XCTUnwrap(error, "refusal \(index + 1) is a MeteorError")
            XCTAssertEqual(error.error, "test-error")
            XCTAssertEqual(error.reason, "refused")
            XCTAssertEqual(try error.details(as: Details.self), Details(field: "name"))
        }
        let subscription = client.subscribe("secret")
        harness.receive(.nosub(id: subscription.id, error: Self.refusal))
        do {
            try await withTimeout(5, "nosub") { try await subscription.ready() }
            XCTFail("the server refused the subscription")
        } catch let error as MeteorError {
            XCTAssertEqual(error.error, "test-error")
            XCTAssertEqual(try error.details(as: Details.self), Details(field: "name"))
        }
    }

    /// Meteor's client refuses an update by selector before sending it: the same shape as the server's refusal.
    func testTheLocalRefusalOfAnUntrustedSelectorIsAMeteorErrorToo() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        do {
            _ = try await harness.client.collection("players").update(
                ["name": "Ada"] as EJSONValue, ["$set": ["score": 1]])
            XCTFail("refused")
        } catch let error as MeteorError {
            XCTAssertEqual(error.error, 403)
        }
    }

    /// Local failures stay their own type: a closed client is not a server's refusal.
    func testALocalFailureIsAMethodError() async throws {
        let harness = ClientHarness()
        harness.client.close()
        do {
            _ = try await harness.client.call("m")
            XCTFail("closed")
        } catch let error as MethodError {
            XCTAssertEqual(error.kind, .clientClosed)
        }
    }
}
