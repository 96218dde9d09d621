import Dispatch
import Foundation
import TestSupport
import XCTest

@testable import MeteorDDP

/// `restoredCalls` hands outcomes to iterations that their apps may cancel at any moment.
final class RestoredCallsTests: XCTestCase {
    /// An iteration's task cancelled while an outcome is handed to it: the stream ends under the task's status lock
    /// and its termination handler takes the outcomes' lock, while handing over an outcome takes the task's status
    /// lock. Handing over under the outcomes' lock deadlocked (as ``Broadcaster`` did in the chaos soak).
    ///
    /// A deadlock is a round that never ends: the test fails when no round has ended for 30 s, and stops starting
    /// rounds after 1,000 or 10 s (at least 200), so a slow or busy machine is not read as a deadlock.
    func testCancellingAnIterationWhileAnOutcomeIsRecordedDoesNotDeadlock() {
        let rounds = 1_000
        let call = RestoredCall(id: "1", name: "m", params: [], randomSeed: nil)
        let calls = RestoredCalls(calls: Array(repeating: call, count: rounds + 1))
        let go = DispatchSemaphore(value: 0)
        let recorded = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let stop = Locked(false)
        let completedRounds = Locked(0)
        let deadlocked = Locked(false)
        Thread {
            while true {
                go.wait()
                if stop.value { return }
                calls.record(call, .success(nil), source: .sentAgain)
                recorded.signal()
            }
        }.start()
        Thread {
            // Many live iterations, so that handing over one outcome takes a while: a cancellation lands in the middle.
            var iterations = (0..<200).map { _ in Task { for await _ in calls {} } }
            let start = ContinuousClock.now
            for round in 0..<rounds {
                if round >= 200, ContinuousClock.now - start > .seconds(10) { break }
                go.signal()
                for _ in 0..<Int.random(in: 0..<100) { sched_yield() }
                let index = Int.random(in: 0..<iterations.count)
                iterations[index].cancel()
                guard recorded.wait(timeout: .now() + 30) == .success else {
                    deadlocked.mutate { $0 = true }
                    break
                }
                completedRounds.mutate { $0 += 1 }
                iterations[index] = Task { for await _ in calls {} }
            }
            for iteration in iterations { iteration.cancel() }
            stop.mutate { $0 = true }
            go.signal()
            finished.signal()
        }.start()
        XCTAssertEqual(finished.wait(timeout: .now() + 120), .success, "the rounds did not end")
        XCTAssertFalse(deadlocked.value, "cancelling iterations while outcomes are recorded deadlocked")
        XCTAssertGreaterThanOrEqual(completedRounds.value, 200)
        XCTAssertEqual(calls.outcomes.count, completedRounds.value)
    }
}
