import EJSON
import XCTest

@testable import MeteorDDP

/// A `result`, `updated`, `ready` or `nosub` whose EJSON or fields cannot be read, but whose ids can: reported as a
/// protocol violation, and whoever waits on those ids stops waiting (Meteor's client drops the frame and the call or
/// subscription waits forever).
final class UnreadableFrameTests: XCTestCase {
    private func call(_ harness: ClientHarness, _ name: String) -> (XCTestExpectation, ResultBox) {
        let done = XCTestExpectation(description: "\(name) completed")
        let box = ResultBox()
        _ = try? harness.client.call(name) { result in
            box.set(result)
            done.fulfill()
        }
        harness.settle()
        return (done, box)
    }

    func testAResultWhoseValueDoesNotParseFailsTheCall() async throws {
        let harness = ClientHarness { $0.refusesUnregisteredEJSONTypes = true }
        harness.establishConnection()
        var errors = harness.client.errors.makeAsyncIterator()
        let (done, box) = call(harness, "thing")
        harness.receive(frame: #"{"msg":"result","id":"1","result":{"$type":"app.Unknown","$value":1}}"#)
        harness.receive(.updated(methodIDs: ["1"]))
        await fulfillment(of: [done], timeout: 5)
        guard case .failure(let error as MethodError)? = box.result else {
            return XCTFail("not failed: \(String(describing: box.result))")
        }
        XCTAssertEqual(error.kind, .protocolViolation)
        guard case .malformedJSON(let reason)? = error.violation?.kind else { return XCTFail("no violation: \(error)") }
        XCTAssertTrue(reason.contains("Custom EJSON type app.Unknown is not defined"), reason)
        let reported = await errors.next()
        XCTAssertEqual(reported?.code, .protocolViolation, "the frame is reported as well")
    }

    func testAResultWithAnInvalidDateFailsTheCallEvenBeforeUpdated() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let resultSeen = XCTestExpectation(description: "the result callback")
        var options = MethodOptions()
        options.onResultReceived = { result in
            if case .failure(let error as MethodError) = result, error.kind == .protocolViolation {
                resultSeen.fulfill()
            }
        }
        _ = try harness.client.call("when", options: options) { _ in }
        harness.settle()
        harness.receive(frame: #"{"msg":"result","id":"1","result":{"$date":"yesterday"}}"#)
        await fulfillment(of: [resultSeen], timeout: 5)
    }

    func testAnUpdatedWithANonStringIDStillCountsForTheIDsItNames() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let (done, box) = call(harness, "a")
        harness.receive(.result(id: "1", result: 7, error: nil))
        harness.receive(frame: #"{"msg":"updated","methods":["1",2]}"#)
        await fulfillment(of: [done], timeout: 5)
        XCTAssertEqual(try box.result?.get(), 7)
    }

    func testAReadyThatDoesNotParseFailsTheSubscription() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let subscription = harness.client.subscribe("things")
        harness.settle()
        harness.receive(frame: #"{"msg":"ready","subs":["\#(subscription.id)",{"x":1}]}"#)
        do {
            try await withTimeout(5, "ready() to throw") { try await subscription.ready() }
            XCTFail("ready() returned")
        } catch let error as SubscriptionError {
            XCTAssertEqual(error.violation?.kind, .wrongFieldType(message: "ready", field: "subs"))
            XCTAssertEqual(error.meteorError.error, .string("protocol-violation"))
        }
        guard case .failed = subscription.status else { return XCTFail("status \(subscription.status)") }
    }

    func testANosubWhoseErrorDoesNotParseFailsTheSubscription() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let subscription = harness.client.subscribe("things")
        harness.settle()
        harness.receive(
            frame: #"{"msg":"nosub","id":"\#(subscription.id)","error":{"error":403,"details":{"$binary":7}}}"#)
        do {
            try await withTimeout(5, "ready() to throw") { try await subscription.ready() }
            XCTFail("ready() returned")
        } catch let error as SubscriptionError {
            guard case .malformedJSON? = error.violation?.kind else {
                return XCTFail("violation \(String(describing: error.violation))")
            }
        }
    }

    func testAFrameForNobodyIsOnlyReported() async {
        let harness = ClientHarness()
        harness.establishConnection()
        var errors = harness.client.errors.makeAsyncIterator()
        harness.receive(frame: #"{"msg":"result","id":"99","result":{"$date":"x"}}"#)
        let reported = await errors.next()
        XCTAssertEqual(reported?.violation?.unreadable, .result(methodID: "99"))
        XCTAssertEqual(harness.status, .connected)
    }
}

/// No value is lost to a custom EJSON type the app did not register: it is kept (name and raw value) and written back
/// as it was read; `refusesUnregisteredEJSONTypes` keeps Meteor's refusal.
final class UnregisteredEJSONTypeTests: XCTestCase {
    func testADocumentHoldingAnUnregisteredTypeReachesTheCache() {
        let harness = ClientHarness()
        harness.establishConnection()
        harness.receive(
            frame:
                #"{"msg":"added","collection":"c","id":"1","fields":"#
                + #"{"money":{"$type":"app.Money","$value":{"cents":150}}}}"#
        )
        harness.flushData()
        XCTAssertEqual(harness.document("c", "1")?["money"], .custom(type: "app.Money", value: ["cents": 150]))
    }

    func testAnObjectIDInAFieldReachesTheCacheAndAResultCompletes() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        harness.receive(
            frame:
                #"{"msg":"added","collection":"c","id":"1","fields":"#
                + #"{"ref":{"$type":"oid","$value":"5f1d7a3c9e1b2a0012345678"}}}"#
        )
        harness.flushData()
        XCTAssertEqual(harness.document("c", "1")?["ref"], .custom(type: "oid", value: "5f1d7a3c9e1b2a0012345678"))
        let done = XCTestExpectation(description: "completed")
        let box = ResultBox()
        _ = try harness.client.call("make") {
            box.set($0)
            done.fulfill()
        }
        harness.settle()
        harness.receive(
            frame: #"{"msg":"result","id":"1","result":{"$type":"oid","$value":"5f1d7a3c9e1b2a0012345678"}}"#)
        harness.receive(.updated(methodIDs: ["1"]))
        await fulfillment(of: [done], timeout: 5)
        XCTAssertEqual(try box.result?.get(), .custom(type: "oid", value: "5f1d7a3c9e1b2a0012345678"))
    }

    func testStrictModeRefusesTheFrameAsMeteorDoes() async {
        let harness = ClientHarness { $0.refusesUnregisteredEJSONTypes = true }
        harness.establishConnection()
        var errors = harness.client.errors.makeAsyncIterator()
        harness.receive(
            frame: #"{"msg":"added","collection":"c","id":"1","fields":{"money":{"$type":"app.Money","$value":1}}}"#)
        harness.flushData()
        let reported = await errors.next()
        guard case .malformedJSON(let reason)? = reported?.violation?.kind else {
            return XCTFail("\(String(describing: reported))")
        }
        XCTAssertTrue(reason.hasPrefix("Custom EJSON type app.Money is not defined"), reason)
        XCTAssertNil(harness.document("c", "1"))
    }
}
