import XCTest

@testable import MeteorDDP

/// The queue between the client queue and a connection's writer task: frames in order, everything queued taken at
/// once, and the writer released when the queue finishes or its task is cancelled.
final class OutboundFramesTests: XCTestCase {
    func testTheWriterTakesEverythingQueuedInOrder() async {
        let frames = OutboundFrames()
        for n in 0..<5 { frames.append("f\(n)") }
        let first = await frames.next()
        XCTAssertEqual(first, ["f0", "f1", "f2", "f3", "f4"])
        frames.append("f5")
        let second = await frames.next()
        XCTAssertEqual(second, ["f5"])
    }

    func testFramesFromManyThreadsAreEachTakenOnceInTheirThreadsOrder() async throws {
        let frames = OutboundFrames()
        let writer = Task { () -> [String] in
            var taken: [String] = []
            while taken.count < 2_000, let batch = await frames.next() { taken += batch }
            return taken
        }
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for n in 0..<500 { frames.append("\(thread)-\(n)") }
        }
        let all = try await withTimeout(5, "the writer to take 2,000 frames") { await writer.value }
        XCTAssertEqual(all.count, 2_000)
        for thread in 0..<4 {
            XCTAssertEqual(all.filter { $0.hasPrefix("\(thread)-") }, (0..<500).map { "\(thread)-\($0)" })
        }
    }

    func testFinishReleasesTheWaitingWriterAndDropsLaterFrames() async throws {
        let frames = OutboundFrames()
        let waiting = expectation(description: "the writer waits")
        let writer = Task { () -> [String]? in
            waiting.fulfill()
            return await frames.next()
        }
        await fulfillment(of: [waiting], timeout: 5)
        frames.finish()
        let result = try await withTimeout(5, "the writer to end after finish()") { await writer.value }
        XCTAssertNil(result)
        frames.append("late")
        let afterFinish = await frames.next()
        XCTAssertNil(afterFinish, "a finished queue drops what comes later")
    }

    /// A close after sending (`disconnect`, the last frame): the writer gets what was queued, then the end; later
    /// frames are dropped.
    func testFinishingAfterTheQueuedFramesHandsThemOverFirst() async {
        let frames = OutboundFrames()
        frames.append("a")
        frames.append("disconnect")
        frames.finishAfterQueued()
        frames.append("late")
        let first = await frames.next()
        XCTAssertEqual(first, ["a", "disconnect"])
        let end = await frames.next()
        XCTAssertNil(end)
    }

    func testCancellingTheWaitingWriterEndsIt() async throws {
        let frames = OutboundFrames()
        let writer = Task { await frames.next() }
        writer.cancel()
        let result = try await withTimeout(5, "the cancelled writer to end") { await writer.value }
        XCTAssertNil(result)
    }
}
