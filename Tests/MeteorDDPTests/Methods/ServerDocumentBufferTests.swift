import EJSON
import XCTest

@testable import MeteorDDP

/// Flush waiters (LC `_runWhenAllServerDocsAreFlushed`): when they run, and what they cost with many calls in flight.
final class ServerDocumentBufferTests: XCTestCase {
    private func key(_ id: String) -> DocumentKey { DocumentKey(collectionName: "todos", documentID: id) }

    private let waiters = FlushWaiters()

    private func flushed(_ buffer: inout ServerDocumentBuffer, _ methodID: String) {
        waiters.methodUpdated(&buffer, methodID)
    }

    /// 2,000 calls sent at once (as calls made offline go out), each stub writing a document; each `updated` registers
    /// a waiter. Meteor gives every still-tracked document one callback per waiter: ~1M callbacks at the peak here.
    func testWaitersRegisteredWhileTheSentDocumentsOnlyShrinkHoldOneCallbackPerDocument() {
        let calls = 2_000
        var buffer = ServerDocumentBuffer()
        for n in 1...calls { buffer.stubWrote(methodID: "\(n)", originals: [(key("d\(n)"), nil)]) }
        let sent = Set((1...calls).map { "\($0)" })
        let fired = Locked<[Int]>([])
        var peak = 0
        for n in 1...calls {
            flushed(&buffer, "\(n)")
            let waiting = waiters.register(&buffer, sent: sent, generation: 1) {
                fired.mutate { $0.append(n) }
            }
            XCTAssertEqual(waiting, n < calls, "after the last flush nothing is left to wait for")
            if n < calls { XCTAssertEqual(fired.value, [], "waiter \(n) ran before the last document was flushed") }
            peak = max(peak, buffer.flushWaiterCount)
        }
        XCTAssertLessThanOrEqual(peak, calls, "one callback per tracked document, however many waiters")
        XCTAssertEqual(fired.value, Array(1..<calls), "every waiter ran at the last flush, in the order registered")
    }

    func testAWaiterRegisteredAfterAnotherCallWasSentAlsoWaitsForThatCallsDocuments() {
        var buffer = ServerDocumentBuffer()
        buffer.stubWrote(methodID: "1", originals: [(key("a"), nil)])
        buffer.stubWrote(methodID: "2", originals: [(key("b"), nil)])
        let fired = Locked<[String]>([])
        XCTAssertTrue(
            waiters.register(&buffer, sent: ["1"], generation: 1) { fired.mutate { $0.append("first") } })
        // Call 2 goes out (a new generation): its document joins those the next waiter waits for.
        XCTAssertTrue(
            waiters.register(&buffer, sent: ["1", "2"], generation: 2) {
                fired.mutate { $0.append("second") }
            })
        flushed(&buffer, "1")
        XCTAssertEqual(fired.value, ["first"], "the second waiter also waits for call 2's document")
        flushed(&buffer, "2")
        XCTAssertEqual(fired.value, ["first", "second"])
    }

    func testAWaiterRegisteredAfterASessionResetIsNotJoinedToTheDroppedOnes() {
        var buffer = ServerDocumentBuffer()
        buffer.stubWrote(methodID: "1", originals: [(key("a"), nil)])
        let fired = Locked<[String]>([])
        XCTAssertTrue(
            waiters.register(&buffer, sent: ["1"], generation: 1) {
                fired.mutate { $0.append("old session") }
            })
        // The new session's first data: waiting callbacks are dropped (their work is redone for the new session).
        buffer.sessionReset()
        XCTAssertTrue(
            waiters.register(&buffer, sent: ["1"], generation: 1) {
                fired.mutate { $0.append("new session") }
            })
        flushed(&buffer, "1")
        XCTAssertEqual(fired.value, ["new session"])
        XCTAssertEqual(buffer.waitingFlushWaiters, 0, "the dropped waiter is forgotten too")
    }
}
