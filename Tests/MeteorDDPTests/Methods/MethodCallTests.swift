import EJSON
import TestSupport
import XCTest

@testable import MeteorDDP

/// Meteor 3's `callAsync`: the stub's value at once, the server's result after `result` and `updated`.
final class MethodCallTests: XCTestCase {
    func testTheStubsValueComesAtOnceAndTheServersResultAfterResultAndUpdated() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        harness.client.defineStub("todos.add") { (context, text: String) -> String? in
            try context.collection("todos").insert(["text": .string(text)])
        }
        let call = harness.client.callAsync("todos.add", params: ["milk"])
        let stubValue = try await withTimeout(5, "stub value") { try await call.stubValue }
        let id = try XCTUnwrap(stubValue?.stringValue)
        XCTAssertEqual(
            harness.document("todos", id)?["text"], "milk", "the stub's write is visible before the server answers")
        let server = Task { try await call.value }
        harness.receive(.result(id: "1", result: .string(id), error: nil))
        harness.receive(.updated(methodIDs: ["1"]))
        let value = try await withTimeout(5, "server result") { try await server.value }
        XCTAssertEqual(value, .string(id))
        let again = try await call.value
        XCTAssertEqual(again, .string(id), "awaited twice, the same value")
    }

    func testAThrowingStubRejectsTheStubValueButTheCallGoesOutAndTheServerDecides() async throws {
        struct Refused: Error {}
        let harness = ClientHarness()
        harness.establishConnection()
        harness.client.defineStub("m") { _ in throw Refused() }
        let call = harness.client.callAsync("m")
        do {
            _ = try await withTimeout(5, "stub value") { try await call.stubValue }
            XCTFail("the stub threw")
        } catch is Refused {}
        harness.settle()
        XCTAssertEqual(harness.sent.last, .method(id: "1", method: "m", params: [], randomSeed: nil))
        harness.receive(.result(id: "1", result: nil, error: MeteorError(error: "not-allowed", reason: "no")))
        harness.receive(.updated(methodIDs: ["1"]))
        do {
            _ = try await withTimeout(5, "server result") { try await call.value }
            XCTFail("the server refused")
        } catch let error as MeteorError {
            XCTAssertEqual(error.error, "not-allowed")
        }
    }

    func testATypedCallDecodesBothValues() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        harness.client.defineStub("count") { (context, list: String) -> Int in 2 }
        let call = harness.client.callAsync("count", "list1", returning: Int.self)
        let local = try await withTimeout(5, "stub value") { try await call.stubValue }
        XCTAssertEqual(local, 2)
        harness.settle()
        XCTAssertEqual(harness.sent.last, .method(id: "1", method: "count", params: ["list1"], randomSeed: nil))
        harness.receive(.result(id: "1", result: 3, error: nil))
        harness.receive(.updated(methodIDs: ["1"]))
        let value = try await withTimeout(5, "server result") { try await call.value }
        XCTAssertEqual(value, 3)
    }

    func testWithoutAStubTheStubValueIsNil() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let call = harness.client.callAsync("m")
        let local = try await withTimeout(5, "stub value") { try await call.stubValue }
        XCTAssertNil(local)
    }

    func testACancelledWaitEndsOnlyThatWait() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let call = harness.client.callAsync("m")
        let waiter = Task { try await call.value }
        waiter.cancel()
        do {
            _ = try await waiter.value
            XCTFail("cancelled")
        } catch is CancellationError {}
        harness.receive(.result(id: "1", result: "ok", error: nil))
        harness.receive(.updated(methodIDs: ["1"]))
        let value = try await withTimeout(5, "server result") { try await call.value }
        XCTAssertEqual(value, "ok")
    }
}
