import EJSON
import XCTest

@testable import MeteorDDP

/// Meteor's method blocks as event scripts: which calls go on the wire when.
final class MethodCoordinatorTests: XCTestCase {
    private var coordinator = MethodCoordinator()

    private func call(_ name: String, wait: Bool = false, noRetry: Bool = false) -> [String] {
        let id = coordinator.makeMethodID()
        var options = MethodOptions(wait: wait, noRetry: noRetry)
        options.onResultReceived = nil
        let invocation = MethodCoordinator.Invocation(
            id: id, name: name, message: .method(id: id, method: name, params: [], randomSeed: nil), options: options,
            completion: { _ in }
        )
        return coordinator.enqueue(invocation).map(\.name)
    }

    private func finish(_ id: String) -> [String] {
        _ = coordinator.receivedResult(id: id, .success(nil))
        guard case .completed(_, let next) = coordinator.dataBecameVisible(id: id) else {
            XCTFail("\(id) did not complete")
            return []
        }
        return next.map(\.name)
    }

    func testMethodIDsAreDecimalStringsFromOne() {
        XCTAssertEqual(coordinator.makeMethodID(), "1")
        XCTAssertEqual(coordinator.makeMethodID(), "2")
    }

    func testCallsWithoutWaitAreSentTogether() {
        XCTAssertEqual(call("a"), ["a"])
        XCTAssertEqual(call("b"), ["b"])
    }

    func testAWaitCallIsSentOnlyAfterEarlierCallsCompleteAndHoldsLaterOnes() {
        XCTAssertEqual(call("a"), ["a"])
        XCTAssertEqual(call("w", wait: true), [])
        XCTAssertEqual(call("b"), [])
        XCTAssertEqual(call("c"), [])
        XCTAssertEqual(finish("1"), ["w"])
        XCTAssertEqual(finish("2"), ["b", "c"])
    }

    func testACallCompletesOnlyWithBothResultAndDataVisibleInEitherOrder() {
        _ = call("a")
        _ = call("b")
        guard case .recorded = coordinator.dataBecameVisible(id: "1") else {
            return XCTFail("updated first must wait for the result")
        }
        guard case .completed = coordinator.receivedResult(id: "1", .success("x")) else {
            return XCTFail("result completes it")
        }
        guard case .recorded = coordinator.receivedResult(id: "2", .success(nil)) else {
            return XCTFail("result first must wait for data")
        }
        guard case .completed = coordinator.dataBecameVisible(id: "2") else { return XCTFail("data completes it") }
    }

    func testResultForAnUnknownOrNotYetSentCallIsUnknown() {
        _ = call("a")
        _ = call("w", wait: true)
        guard case .unknown = coordinator.receivedResult(id: "999", .success(1)) else { return XCTFail() }
        guard case .unknown = coordinator.receivedResult(id: "2", .success(1)) else {
            return XCTFail("w is not on the wire yet")
        }
    }

    func testReconnectFailsSentNoRetryCallsAndKeepsTheRest() {
        _ = call("addTodo")
        _ = call("payment", noRetry: true)
        _ = call("halfDone")
        _ = coordinator.receivedResult(id: "3", .success("H"))
        let failed = coordinator.socketReset().failed
        XCTAssertEqual(failed.map(\.name), ["payment"])
        guard case .failure(let error as MethodError)? = failed.first?.result else {
            return XCTFail("no failure result")
        }
        XCTAssertEqual(error.kind, .invocationFailed)
        // A reconnect hook calls "reauth" first; the old non-wait block merges behind it.
        XCTAssertEqual(call("reauth"), ["reauth"])
        XCTAssertEqual(coordinator.reconnectHooksRan().map(\.name), ["addTodo"])
        let quiescence = coordinator.reconnectQuiescence()
        XCTAssertEqual(
            quiescence.completeAtQuiescence, ["2", "3"], "calls with a result but no data complete at quiescence")
        XCTAssertEqual(quiescence.blocking, ["1", "4"], "calls sent on the new socket block quiescence")
    }

    func testReconnectPutsOldCallsBehindAWaitCallFromAHook() {
        _ = call("a")
        _ = coordinator.socketReset()
        XCTAssertEqual(call("login", wait: true), ["login"])
        XCTAssertEqual(coordinator.reconnectHooksRan().map(\.name), [])
        XCTAssertEqual(finish("2"), ["a"])
    }

    func testAResetBeforeTheHooksRanKeepsTheCallsTheyMadeFirst() {
        _ = call("a")
        _ = coordinator.socketReset()
        XCTAssertEqual(call("reauth"), ["reauth"])
        // The socket is lost again before the hooks are done: the set-aside block goes behind "reauth", once.
        _ = coordinator.socketReset()
        XCTAssertEqual(coordinator.reconnectHooksRan().map(\.name), ["reauth", "a"])
        XCTAssertEqual(coordinator.reconnectHooksRan().map(\.name), [], "nothing is put back twice")
    }

    func testReconnectWithoutHooksResendsTheFirstBlock() {
        _ = call("a")
        _ = call("w", wait: true)
        _ = coordinator.socketReset()
        XCTAssertEqual(coordinator.reconnectHooksRan().map(\.name), ["a"])
    }

    func testResultsAnsweredOutOfOrderEachCompleteTheirOwnCallOnce() {
        for name in ["a", "b", "c", "d"] { _ = call(name) }
        // The server may answer a later call of the block first.
        guard case .recorded(let third) = coordinator.receivedResult(id: "3", .success("C")) else {
            return XCTFail("3 is sent")
        }
        XCTAssertEqual(third.name, "c")
        guard case .recorded = coordinator.receivedResult(id: "1", .success("A")) else { return XCTFail("1 is sent") }
        guard case .unknown = coordinator.receivedResult(id: "3", .success("again")) else {
            return XCTFail("a second result for the same call is not one of the block's")
        }
        guard case .recorded = coordinator.receivedResult(id: "4", .success("D")) else { return XCTFail("4 is sent") }
        guard case .recorded = coordinator.receivedResult(id: "2", .success("B")) else { return XCTFail("2 is sent") }
        for (id, value) in [("2", "B"), ("4", "D"), ("1", "A"), ("3", "C")] {
            guard case .completed(let invocation, _) = coordinator.dataBecameVisible(id: id) else {
                return XCTFail("\(id) did not complete")
            }
            XCTAssertEqual(invocation.result.flatMap { try? $0.get() }, .string(value))
        }
        XCTAssertTrue(coordinator.invocations.isEmpty)
        XCTAssertTrue(coordinator.sentIDs.isEmpty)
    }

    func testAResultAfterTheNextBlockWasSentIsNotTakenFromIt() {
        _ = call("a")
        _ = call("w", wait: true)
        XCTAssertEqual(finish("1"), ["w"])
        guard case .unknown = coordinator.receivedResult(id: "1", .success(nil)) else {
            return XCTFail("1 completed already")
        }
        guard case .recorded = coordinator.receivedResult(id: "2", .success(nil)) else {
            return XCTFail("w is on the wire")
        }
    }

    /// Flush waiters of one generation share a countdown (ServerDocumentBuffer): every way a call goes on the wire
    /// must start a new generation, or a waiter would skip the newly sent calls' documents.
    func testEveryWayACallGoesOnTheWireStartsANewSentGeneration() {
        var generation = coordinator.sentGeneration
        func changed() -> Bool {
            defer { generation = coordinator.sentGeneration }
            return coordinator.sentGeneration != generation
        }
        _ = call("a")
        XCTAssertTrue(changed(), "a call joining the first block")
        _ = call("w", wait: true)
        XCTAssertFalse(changed(), "a wait call queued behind the first block is not sent")
        XCTAssertEqual(finish("1"), ["w"])
        XCTAssertTrue(changed(), "the next block sent when the first is done")
        _ = coordinator.socketReset()
        XCTAssertTrue(coordinator.sentIDs.isEmpty)
        XCTAssertEqual(coordinator.reconnectHooksRan().map(\.name), ["w"])
        XCTAssertTrue(changed(), "the blocks sent again after a reconnect")
    }
}
