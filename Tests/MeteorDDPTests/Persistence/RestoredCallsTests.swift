import Dispatch
import Foundation
import XCTest

@testable import MeteorDDP

/// `restoredCalls` hands outcomes to iterations that their apps may cancel at any moment.
final class RestoredCallsTests: XCTestCase {
    /// An iteration's task cancelled while an outcome is handed to it: the stream ends under the task's status lock
    /// and its termination handler takes the outcomes' lock, while handing over an outcome takes the task's status
    /// lock. Handing over under the outcomes' lock deadlocked (as ``Broadcaster`` did in the chaos soak).
    func testCancellingAnIterationWhileAnOutcomeIsRecordedDoesNotDeadlock() {
        let rounds = 1_000
        let call = RestoredCall(id: "1", name: "m", params: [], randomSeed: nil)
        let calls = RestoredCalls(calls: Array(repeating: call, count: rounds + 1))
        let go = DispatchSemaphore(value: 0)
        let recorded = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        Thread {
            for _ in 0..<rounds {
                go.wait()
                calls.record(call, .success(nil), source: .sentAgain)
                recorded.signal()
            }
        }.start()
        Thread {
            // Many live iterations, so that handing over one outcome takes a while: a cancellation lands in the middle.
            var iterations = (0..<200).map { _ in Task { for await _ in calls {} } }
            for _ in 0..<rounds {
                go.signal()
                for _ in 0..<Int.random(in: 0..<100) { sched_yield() }
                let index = Int.random(in: 0..<iterations.count)
                iterations[index].cancel()
                recorded.wait()
                iterations[index] = Task { for await _ in calls {} }
            }
            for iteration in iterations { iteration.cancel() }
            finished.signal()
        }.start()
        XCTAssertEqual(
            finished.wait(timeout: .now() + 60), .success,
            "cancelling iterations while outcomes are recorded deadlocked")
        XCTAssertEqual(calls.outcomes.count, rounds)
    }
}
