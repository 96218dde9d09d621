import EJSON
import NIOPosix
import XCTest

@testable import MeteorDDP

/// A ``Transport`` may deliver its events from any thread, one at a time: a third-party transport can move its
/// connection from one event loop to another. The client's hold on its callbacks for a burst of frames (taken on the
/// delivering loop, released by a task on that loop) must not race with the next event arriving on another loop.
///
/// Run under ThreadSanitizer by `.ci/run`: before the hold's flag was atomic, TSan reported the race here.
final class TransportEventThreadsTests: XCTestCase {
    func testEventsDeliveredInTurnFromTwoEventLoopsCompleteEveryCall() throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        defer { try? group.syncShutdownGracefully() }
        let loops = Array(group.makeIterator())
        XCTAssertEqual(loops.count, 2)
        let calls = 300
        var completed: [XCTestExpectation] = []
        for n in 0..<calls {
            let done = expectation(description: "call \(n) completed")
            completed.append(done)
            try harness.client.call("m", params: [.number(Double(n))]) { result in
                if case .success(.number(let value)?) = result, value == Double(n) {
                    done.fulfill()
                } else {
                    XCTFail("call \(n): \(result)")
                }
            }
            let id = String(n + 1)
            // The result and the updated come in turn from the two loops; each delivery ends before the next starts.
            try loops[n % 2].submit { harness.transport.receive(#"{"msg":"result","id":"\#(id)","result":\#(n)}"#) }
                .wait()
            try loops[(n + 1) % 2].submit { harness.transport.receive(#"{"msg":"updated","methods":["\#(id)"]}"#) }
                .wait()
        }
        wait(for: completed, timeout: 30)
    }
}
