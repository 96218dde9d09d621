import Dispatch
import Foundation
import XCTest

@testable import MeteorDDP

/// Streams of a changing value (connection status, account, subscription status) start with the value current when
/// they start and never miss a later one nor go back to an older one.
final class BroadcasterTests: XCTestCase {
    func testStreamsStartedWhileTheValueChangesStartWithTheCurrentValueAndMissNothing() async {
        let broadcaster = Broadcaster<Int>(bufferLimit: 100_000, current: 0)
        let last = 5_000
        let writerDone = DispatchSemaphore(value: 0)
        Thread {
            for value in 1...last { broadcaster.yield(value) }
            writerDone.signal()
        }.start()
        var streams: [AsyncStream<Int>] = []
        for _ in 0..<200 { streams.append(broadcaster.makeStream()) }
        writerDone.wait()
        broadcaster.finish()
        for stream in streams {
            var previous: Int?
            var gaps = 0
            for await value in stream {
                if let previous, value != previous + 1 { gaps += 1 }
                previous = value
            }
            XCTAssertEqual(gaps, 0, "each value follows the one before: none missed, none older")
            XCTAssertEqual(previous, last)
        }
    }

    /// A consumer's task cancelled while a value is yielded to it: cancelling runs the stream's termination handler
    /// under the task's status lock, and resuming the consumer takes that lock. The broadcaster's lock must not be held
    /// across the resume, or the two threads wait for each other for ever (it happened: the chaos soak cancelled its
    /// task reading `errors` as `close()` reported an error, and both threads hung).
    ///
    /// A deadlock is a round that never ends, so the test fails when no round has ended for 30 s, not when the rounds
    /// together are slow: under ThreadSanitizer on two cores shared with a release build, 2,000 rounds took more than
    /// 60 s without any hanging. It stops starting rounds after 2,000 or after 10 s, whichever comes first (at least
    /// 200); with the resume moved back under the state lock it hangs within the first ten rounds.
    func testCancellingAConsumerWhileValuesAreYieldedDoesNotDeadlock() {
        let broadcaster = Broadcaster<Int>(bufferLimit: 8, current: 0)
        let stop = ManagedAtomicFlag()
        let writer = Thread {
            var value = 0
            while !stop.isSet {
                value += 1
                broadcaster.yield(value)
                // Lets the other thread take the broadcaster's lock: a writer re-taking it at once starved the
                // cancelling thread under ThreadSanitizer on two busy cores.
                sched_yield()
            }
        }
        writer.start()
        let roundsEnded = ManagedAtomicCounter()
        let finished = DispatchSemaphore(value: 0)
        Thread {
            let started = ContinuousClock.now
            var round = 0
            while round < 2_000 && (round < 200 || ContinuousClock.now - started < .seconds(10)) {
                let stream = broadcaster.makeStream()
                let ended = DispatchSemaphore(value: 0)
                let consumer = Task {
                    for await _ in stream {}
                    ended.signal()
                }
                for _ in 0..<Int.random(in: 0..<50) { sched_yield() }
                consumer.cancel()
                // One consumer at a time. A stream whose task has not run yet stays registered, and the writer hands
                // every value to each: under ThreadSanitizer on busy cores such streams piled up by the thousand.
                ended.wait()
                round += 1
                roundsEnded.increment()
            }
            finished.signal()
        }.start()
        var progressSeen = -1
        var result = DispatchTimeoutResult.timedOut
        // Waits while rounds keep ending; a round that has hung for 30 s is a deadlock.
        while progressSeen < roundsEnded.value {
            progressSeen = roundsEnded.value
            result = finished.wait(timeout: .now() + 30)
            if result == .success { break }
        }
        stop.set()
        XCTAssertEqual(
            result, .success, "cancelling consumers while values are yielded deadlocked after \(progressSeen) rounds")
    }

    func testAnEventBroadcasterStartsStreamsWithNothing() async {
        let broadcaster = Broadcaster<Int>(bufferLimit: 10)
        broadcaster.yield(1)
        let stream = broadcaster.makeStream()
        broadcaster.yield(2)
        broadcaster.finish()
        var values: [Int] = []
        for await value in stream { values.append(value) }
        XCTAssertEqual(values, [2])
    }
}

/// A count raised by one thread, read from another.
private final class ManagedAtomicCounter: @unchecked Sendable {
    // @unchecked because `count` is protected by `lock`.
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func increment() { lock.withLock { count += 1 } }
}

/// A flag set once, read from any thread.
private final class ManagedAtomicFlag: @unchecked Sendable {
    // @unchecked because `value` is protected by `lock`.
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}
