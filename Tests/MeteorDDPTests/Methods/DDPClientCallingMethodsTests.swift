import EJSON
import TestSupport
import XCTest

@testable import MeteorDDP

final class DDPClientCallingMethodsTests: XCTestCase {
    private func methodMessages(_ harness: ClientHarness) -> [ClientMessage] {
        harness.sent.filter { if case .method = $0 { true } else { false } }
    }

    private func callAndRecord(
        _ harness: ClientHarness,
        _ name: String,
        params: [EJSONValue] = [],
        options: MethodOptions = MethodOptions()
    ) -> (XCTestExpectation, ResultBox) {
        let done = XCTestExpectation(description: "\(name) completed")
        let box = ResultBox()
        _ = try? harness.client.call(name, params: params, options: options) { result in
            box.set(result)
            done.fulfill()
        }
        return (done, box)
    }

    func testCallingSendsAMethodMessageWithADecimalID() {
        let harness = ClientHarness()
        harness.establishConnection()
        _ = callAndRecord(harness, "addTodo", params: ["milk"])
        harness.settle()
        XCTAssertEqual(
            methodMessages(harness), [.method(id: "1", method: "addTodo", params: ["milk"], randomSeed: nil)])
    }

    /// An `updated` for an id no call has is reported at once (Meteor's client throws "No callback invoker" as it
    /// reads it). It used to wait for the cache's flush first, so a call made meanwhile took the id and that stray
    /// `updated` completed it before its own.
    func testAnUpdatedForAnIdNoCallHasIsReportedAtOnceAndDoesNotCountForACallMadeLater() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let errors = harness.client.errors
        harness.receive(.added(collection: "c", id: "x", fields: [:])) // queued for the cache, not applied yet
        harness.receive(.updated(methodIDs: ["1"]))
        let (done, box) = callAndRecord(harness, "a")
        harness.settle()
        XCTAssertEqual(methodMessages(harness).count, 1, "the call took id 1")
        harness.flushData()
        harness.receive(.result(id: "1", result: "r", error: nil))
        harness.flushData()
        XCTAssertNil(box.value, "the call waits for its own updated")
        let reported = try await withTimeout(5, "the stray updated reported") { () -> DDPError? in
            for await error in errors { return error }
            return nil
        }
        guard case .unexpected(message: "updated", _)? = reported?.violation?.kind else {
            return XCTFail("reported: \(String(describing: reported))")
        }
        harness.receive(.updated(methodIDs: ["1"]))
        harness.flushData()
        await fulfillment(of: [done], timeout: 5)
    }

    func testCompletesOnlyAfterBothResultAndUpdated() {
        let harness = ClientHarness()
        harness.establishConnection()
        let (done, box) = callAndRecord(harness, "a")
        harness.receive(.result(id: "1", result: "someResult", error: nil))
        // Everything the result could have caused has run: the data flushed, the callback queue drained.
        harness.flushData()
        harness.client.callbackQueue.sync {}
        XCTAssertNil(box.result, "not completed on the result alone")
        harness.receive(.updated(methodIDs: ["1"]))
        wait(for: [done], timeout: 5)
        XCTAssertEqual(try box.result?.get(), "someResult")
    }

    func testUpdatedBeforeResultCompletesOnTheResult() {
        let harness = ClientHarness()
        harness.establishConnection()
        let (done, box) = callAndRecord(harness, "a")
        harness.receive(.updated(methodIDs: ["1"]))
        harness.receive(.result(id: "1", result: nil, error: nil))
        wait(for: [done], timeout: 5)
        guard case .success(let value)? = box.result else {
            return XCTFail("no success: \(String(describing: box.result))")
        }
        XCTAssertNil(value, "a result without a result key is undefined")
    }

    func testResultReceivedHandlerRunsOnTheResultAlone() {
        let harness = ClientHarness()
        harness.establishConnection()
        let received = expectation(description: "onResultReceived")
        var options = MethodOptions()
        options.onResultReceived = { result in
            XCTAssertEqual(try? result.get(), "someResult")
            received.fulfill()
        }
        _ = callAndRecord(harness, "a", options: options)
        harness.receive(.result(id: "1", result: "someResult", error: nil))
        wait(for: [received], timeout: 5)
    }

    func testServerErrorCompletesWithMeteorsErrorReasonAndDetails() async {
        let harness = ClientHarness()
        harness.establishConnection()
        let task = Task { try await harness.client.call("a") }
        await waitForMethodMessage(harness, count: 1)
        harness.receive(
            .result(id: "1", result: nil, error: MeteorError(error: .number(403), reason: "bla", details: ["x": 1])))
        harness.receive(.updated(methodIDs: ["1"]))
        do {
            _ = try await value(of: task)
            XCTFail("must throw")
        } catch let error as MeteorError {
            // The server's refusal is thrown as its own MeteorError (one shape for every server error).
            XCTAssertEqual(error.error, 403)
            XCTAssertEqual(error.reason, "bla")
            XCTAssertEqual(error.details, ["x": 1])
        } catch {
            XCTFail("unexpected \(error)")
        }
    }

    func testStubRunsAtOnceAndItsValueIsReturnedOnlyWithReturnStubValue() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let ran = expectation(description: "stub ran")
        harness.client.defineStub("a") { context in
            XCTAssertEqual(context.params, [1])
            ran.fulfill()
            return "stubValue"
        }
        XCTAssertNil(try harness.client.call("a", params: [1]) { _ in })
        wait(for: [ran], timeout: 1)
        XCTAssertEqual(
            try harness.client.call("a", params: [1], options: MethodOptions(returnStubValue: true)) { _ in },
            "stubValue")
    }

    func testStubThatThrowsIsLoggedAndTheCallStillGoesOut() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        struct Exploded: Error {}
        harness.client.defineStub("failingStub") { _ in throw Exploded() }
        _ = try harness.client.call("failingStub") { _ in }
        harness.settle()
        XCTAssertEqual(methodMessages(harness), [.method(id: "1", method: "failingStub", params: [], randomSeed: nil)])
    }

    func testStubThatThrowsWithThrowStubExceptionsThrowsAndSendsNothing() {
        let harness = ClientHarness()
        harness.establishConnection()
        struct Exploded: Error {}
        harness.client.defineStub("failingStub") { _ in throw Exploded() }
        XCTAssertThrowsError(
            try harness.client.call("failingStub", options: MethodOptions(throwStubExceptions: true)) { _ in }
        ) { error in
            XCTAssertEqual((error as? MethodError)?.kind, .stubFailed)
        }
        harness.settle()
        XCTAssertEqual(methodMessages(harness), [])
    }

    func testCallingFromWithinAStubRunsOnlyTheOtherStubSendsNothingAndReturnsItsValue() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        harness.client.defineStub("inner") { context in .number((context.params[0]?.doubleValue ?? 0) * 2) }
        let client = harness.client
        harness.client.defineStub("outer") { _ in
            try client.call("inner", params: [21]) { _ in }
        }
        XCTAssertEqual(try harness.client.call("outer", options: MethodOptions(returnStubValue: true)) { _ in }, 42)
        harness.settle()
        XCTAssertEqual(methodMessages(harness).count, 1)
        XCTAssertEqual(methodMessages(harness).first, .method(id: "1", method: "outer", params: [], randomSeed: nil))
    }

    func testAStubCallingItselfForeverFailsInsteadOfCrashing() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let client = harness.client
        harness.client.defineStub("loop") { _ in try client.call("loop") { _ in } }
        _ = try harness.client.call("loop") { _ in }
        harness.settle()
        XCTAssertEqual(methodMessages(harness).count, 1, "the call still goes out; the stub's failure is logged")
    }

    func testRandomSeedIsSentOnlyWhenTheStubUsedIt() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let seeds = SeedBox()
        harness.client.defineStub("usesRandom") { context in
            seeds.set(context.randomSeed)
            return .string(context.randomID(forSequence: "/collection/todos"))
        }
        harness.client.defineStub("noRandom") { _ in nil }
        _ = try harness.client.call("usesRandom") { _ in }
        _ = try harness.client.call("noRandom") { _ in }
        harness.settle()
        guard case .method(_, _, _, let seed?) = methodMessages(harness).first else {
            return XCTFail("no randomSeed sent")
        }
        XCTAssertEqual(seed, seeds.value)
        XCTAssertEqual(seed.count, 20)
        XCTAssertTrue(seed.allSatisfy(\.isHexDigit))
        XCTAssertEqual(methodMessages(harness).last, .method(id: "2", method: "noRandom", params: [], randomSeed: nil))
    }

    func testStubCannotChangeTheParametersSentToTheServer() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        harness.client.defineStub("a") { context in
            var params = context.params.values
            params[0] = "changed"
            return params[0]
        }
        _ = try harness.client.call("a", params: ["original"]) { _ in }
        harness.settle()
        XCTAssertEqual(methodMessages(harness), [.method(id: "1", method: "a", params: ["original"], randomSeed: nil)])
    }

    func testAWaitMethodHoldsLaterCallsUntilItCompletes() {
        let harness = ClientHarness()
        harness.establishConnection()
        let (aDone, _) = callAndRecord(harness, "a")
        let (wDone, _) = callAndRecord(harness, "w", options: MethodOptions(wait: true))
        _ = callAndRecord(harness, "b")
        harness.settle()
        XCTAssertEqual(methodNames(harness), ["a"])
        harness.receive(.result(id: "1", result: "A", error: nil))
        harness.receive(.updated(methodIDs: ["1"]))
        wait(for: [aDone], timeout: 5)
        harness.settle()
        XCTAssertEqual(methodNames(harness), ["a", "w"])
        harness.receive(.result(id: "2", result: "W", error: nil))
        harness.receive(.updated(methodIDs: ["2"]))
        wait(for: [wDone], timeout: 5)
        harness.settle()
        XCTAssertEqual(methodNames(harness), ["a", "w", "b"])
    }

    func testReconnectResendsUnansweredMethodsWithTheSameFrameAndFailsNoRetryOnes() {
        let harness = ClientHarness()
        harness.establishConnection()
        harness.client.defineStub("addTodo") { context in .string(context.randomID(forSequence: "/collection/todos")) }
        _ = callAndRecord(harness, "addTodo", params: ["stubbed"])
        let (paymentDone, payment) = callAndRecord(
            harness, "payment", params: [42], options: MethodOptions(noRetry: true))
        harness.settle()
        let firstFrame = harness.transport.sentFrames.first { $0.contains("addTodo") }
        harness.dropAndReopen()
        XCTAssertEqual(
            harness.transport.sentFrames.filter { $0.contains(#""msg":"method""#) }, [firstFrame].compactMap { $0 })
        harness.receive(.connected(session: "SESSION-2"))
        harness.receive(.result(id: "1", result: "ok", error: nil))
        harness.receive(.updated(methodIDs: ["1"]))
        wait(for: [paymentDone], timeout: 5)
        guard case .failure(let error as MethodError)? = payment.result else { return XCTFail("payment must fail") }
        XCTAssertEqual(error.kind, .invocationFailed)
        XCTAssertTrue(error.description.contains("invocation-failed"), error.description)
    }

    func testResultForAnUnknownMethodIsReportedAndHarmless() async {
        let harness = ClientHarness()
        harness.establishConnection()
        var errors = harness.client.errors.makeAsyncIterator()
        harness.receive(.result(id: "999", result: 1, error: nil))
        let error = await errors.next()
        XCTAssertEqual(error?.code, .protocolViolation)
        XCTAssertEqual(harness.status, .connected)
    }

    func testClosingTheClientFailsPendingCalls() async {
        let harness = ClientHarness()
        harness.establishConnection()
        let task = Task { try await harness.client.call("slow") }
        await waitForMethodMessage(harness, count: 1)
        harness.client.close()
        do {
            _ = try await value(of: task)
            XCTFail("must throw")
        } catch {
            XCTAssertEqual((error as? MethodError)?.kind, .clientClosed)
        }
    }

    // MARK: - Helpers

    private func methodNames(_ harness: ClientHarness) -> [String] {
        methodMessages(harness).compactMap { if case .method(_, let name, _, _) = $0 { name } else { nil } }
    }

    private func waitForMethodMessage(_ harness: ClientHarness, count: Int) async {
        await harness.transport.waitUntilSent(count: count) { if case .method = $0 { true } else { false } }
    }
}

/// Method parameters may carry secrets: they never reach the log unless a method is opted in for debugging.
final class MethodParameterLoggingTests: XCTestCase {
    func testMethodParametersAreRedactedAtEveryLevelUnlessOptedIn() {
        let log = LogRecorder()
        let harness = ClientHarness { configuration in
            configuration.logger = log.logger
            configuration.methodsWithLoggableParams = ["todos.add"]
        }
        harness.establishConnection()
        _ = try? harness.client.call(
            "resetPassword", params: ["reset-token-s3cret", ["digest": "pw-s3cret", "algorithm": "sha-256"]]
        ) { _ in }
        _ = try? harness.client.call("login", params: [["resume": "resume-s3cret"]]) { _ in }
        _ = try? harness.client.call("todos.add", params: ["buy milk"]) { _ in }
        harness.settle()
        XCTAssertEqual(harness.sent.count, 4, "connect and three methods went out")
        XCTAssertEqual(log.lines.filter { $0.contains("s3cret") }, [])
        XCTAssertTrue(log.lines.contains { $0.contains(#""method":"resetPassword""#) && $0.contains("<redacted>") })
        XCTAssertTrue(log.lines.contains { $0.contains("buy milk") }, "an opted-in method's parameters are logged")
    }

    /// Results carry secrets too: a login's token, `getNewToken`'s. Received results are redacted at `.trace` unless
    /// the method is opted in.
    func testMethodResultsAreRedactedInTheLogUnlessOptedIn() async throws {
        let log = LogRecorder()
        let harness = ClientHarness { configuration in
            configuration.logger = log.logger
            configuration.methodsWithLoggableParams = ["todos.count"]
        }
        harness.establishConnection()
        let login = Task { try await harness.client.login(email: "ada@example.com", password: "pw") }
        await harness.transport.waitUntilSent(count: 1) { if case .method = $0 { true } else { false } }
        harness.receive(
            .result(id: "1", result: ["id": "u1", "token": "login-tok-s3cret", "type": "password"], error: nil))
        harness.receive(.updated(methodIDs: ["1"]))
        _ = try await value(of: login)
        let newToken = Task { try await harness.client.logoutOtherClients() }
        await harness.transport.waitUntilSent(count: 2) { if case .method = $0 { true } else { false } }
        harness.receive(.result(id: "2", result: ["id": "u1", "token": "new-tok-s3cret"], error: nil))
        harness.receive(.updated(methodIDs: ["2"]))
        await harness.transport.waitUntilSent(count: 3) { if case .method = $0 { true } else { false } }
        harness.receive(.result(id: "3", result: nil, error: nil))
        harness.receive(.updated(methodIDs: ["3"]))
        try await value(of: newToken)
        _ = try harness.client.call("todos.count", params: []) { _ in }
        harness.settle()
        harness.receive(.result(id: "4", result: 42, error: nil))
        XCTAssertEqual(log.lines.filter { $0.contains("s3cret") }, [])
        XCTAssertTrue(log.lines.contains { $0.contains(#""msg":"result""#) && $0.contains("<redacted>") })
        XCTAssertTrue(log.lines.contains { $0.contains(#""result":42"#) }, "an opted-in method's result is logged")
    }
}

/// Awaiting APIs honour task cancellation; closing the client settles everything.
final class CancellationAndCloseTests: XCTestCase {
    func testACancelledCallReturnsAtOnceAndTheCallItselfGoesOn() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let task = Task { try await harness.client.call("slow") }
        await harness.transport.waitUntilSent(count: 1) { if case .method = $0 { true } else { false } }
        task.cancel()
        do {
            _ = try await value(of: task)
            XCTFail("must throw")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        harness.receive(.result(id: "1", result: 1, error: nil))
        harness.receive(.updated(methodIDs: ["1"]))
        harness.flushData()
        XCTAssertEqual(
            harness.sent.filter { if case .method = $0 { true } else { false } }.count, 1,
            "sent once, completed quietly")
    }

    func testACancelledReadyReturnsAtOnce() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let sub = harness.client.subscribe("players")
        let task = Task { try await sub.ready() }
        task.cancel()
        do {
            try await value(of: task)
            XCTFail("must throw")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
    }

    func testClosingTheClientStopsSubscriptionsSoReadyThrows() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let sub = harness.client.subscribe("players")
        let task = Task { try await sub.ready() }
        harness.client.close()
        do {
            try await value(of: task)
            XCTFail("must throw")
        } catch {
            XCTAssertTrue(error is SubscriptionStoppedError, "\(error)")
        }
        XCTAssertEqual(sub.status, .stopped)
    }
}

/// A cancelled `ready()` lets go of its waiter at once.
final class CancelledReadyTests: XCTestCase {
    func testCancelledReadyWaitsDoNotAccumulate() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let sub = harness.client.subscribe("never-ready")
        for _ in 0..<100 {
            let waiting = Task { try await sub.ready() }
            waiting.cancel()
            _ = await waiting.result
        }
        XCTAssertEqual(sub.shared.waiterCount, 0)
        sub.stop()
    }
}
