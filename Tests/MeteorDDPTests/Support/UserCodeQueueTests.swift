import Dispatch
import NIOConcurrencyHelpers
import XCTest

@testable import MeteorDDP

/// The callback queue runs work in the order it was handed over, holds or not; a hold keeps new work waiting until
/// it is released, and work handed over while a drain runs is taken by that drain.
final class UserCodeQueueTests: XCTestCase {
    private let ran = NIOLockedValueBox<[Int]>([])

    private func work(_ n: Int) -> @Sendable () -> Void {
        { [ran] in ran.withLockedValue { $0.append(n) } }
    }

    func testWorkRunsInOrderOnItsQueue() {
        let userCode = UserCodeQueue(label: "test")
        userCode.queue.setSpecific(key: Self.key, value: 1)
        let elsewhere = NIOLockedValueBox(0)
        for n in 0..<100 {
            userCode.run { [ran] in
                if DispatchQueue.getSpecific(key: Self.key) != 1 { elsewhere.withLockedValue { $0 += 1 } }
                ran.withLockedValue { $0.append(n) }
            }
        }
        userCode.queue.sync {}
        XCTAssertEqual(ran.withLockedValue { $0 }, Array(0..<100))
        XCTAssertEqual(elsewhere.withLockedValue { $0 }, 0, "every piece of work ran on the queue")
    }

    private static let key = DispatchSpecificKey<Int>()

    func testHeldWorkWaitsForTheReleaseAndKeepsItsPlace() {
        let userCode = UserCodeQueue(label: "test")
        userCode.run(work(1))
        userCode.queue.sync {}
        userCode.hold()
        userCode.run(work(2))
        userCode.run(work(3))
        userCode.queue.sync {}
        XCTAssertEqual(ran.withLockedValue { $0 }, [1], "held work does not wake the queue")
        userCode.hold()
        userCode.release()
        userCode.queue.sync {}
        XCTAssertEqual(ran.withLockedValue { $0 }, [1], "still held by the first hold")
        userCode.release()
        userCode.run(work(4))
        userCode.queue.sync {}
        XCTAssertEqual(ran.withLockedValue { $0 }, [1, 2, 3, 4])
    }

    func testWorkHandedOverByRunningWorkOrDuringAHoldJoinsTheRunningDrain() {
        let userCode = UserCodeQueue(label: "test")
        let first = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        userCode.run { [ran] in
            first.signal()
            proceed.wait()
            ran.withLockedValue { $0.append(1) }
        }
        first.wait()
        // The drain is running: held or not, what is handed over now is taken by it, after the running work.
        userCode.hold()
        userCode.run(work(2))
        userCode.run { [ran] in
            ran.withLockedValue { $0.append(3) }
            userCode.run { ran.withLockedValue { $0.append(5) } }
        }
        userCode.run(work(4))
        proceed.signal()
        userCode.queue.sync {}
        XCTAssertEqual(ran.withLockedValue { $0 }, [1, 2, 3, 4, 5])
        userCode.release()
        userCode.queue.sync {}
        XCTAssertEqual(ran.withLockedValue { $0 }, [1, 2, 3, 4, 5], "nothing runs twice")
    }
}
