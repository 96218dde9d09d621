import Dispatch
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
