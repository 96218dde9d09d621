import EJSON
import XCTest

@testable import MeteorDDP

/// Work that waits for the cache, as data in the core: what waits for the stub-written documents' server versions,
/// what waits for a flush, in which order it comes out, and what a new session drops.
final class ClientCoreAfterUpdateTests: XCTestCase {
    private let todo = DocumentKey(collectionName: "todos", documentID: "a")

    private func names(_ work: [AfterUpdateWork]) -> [String] {
        work.map { work in
            switch work {
            case .methodDataVisible(let id): "visible \(id)"
            case .subscriptionReady(let state): "ready \(state.name)"
            case .judgeRestoredCalls: "judge"
            }
        }
    }

    /// Call 1's stub wrote a document: call 2's data and a subscription's `ready` wait for its server version, in
    /// the order they came, and come out when call 1's `updated` releases it (then they wait for the cache's flush).
    func testWorkWaitsForTheStubWrittenDocumentsAndComesOutInOrderWhenTheyAreReleased() {
        var core = ClientCore.scripted()
        let first = core.call("first")
        let second = core.call("second")
        core.stubRan(methodID: first.id, originals: [(todo, nil)])
        let todos = SubscriptionState(name: "todos", userCode: UserCodeQueue(label: "ClientCoreAfterUpdateTests"))
        XCTAssertEqual(
            core.runWhenAllServerDocumentsAreFlushed(.methodDataVisible(id: second.id), storeIsIdle: true), .queued)
        XCTAssertEqual(core.runWhenAllServerDocumentsAreFlushed(.subscriptionReady(todos), storeIsIdle: true), .queued)
        XCTAssertNil(core.due(after: .afterUpdatePerformed), "nothing is due before the document is released")

        let released = core.releaseDocuments(writtenBy: first.id)
        XCTAssertEqual(released.replacements.map(\.key), [todo])
        XCTAssertEqual(names(released.flushedWork), ["visible \(second.id)", "ready todos"])
        XCTAssertEqual(names(core.releaseDocuments(writtenBy: first.id).flushedWork), [], "released once")

        // Each then waits behind the cache's updates: the first asks for a flush, the second joins it.
        XCTAssertEqual(core.runAfterUpdate(released.flushedWork[0], storeIsIdle: false), .requestFlush(ticket: 1))
        XCTAssertEqual(core.runAfterUpdate(released.flushedWork[1], storeIsIdle: true), .queued)
        XCTAssertNil(core.due(after: .afterUpdatePerformed))
        let due = [core.due(after: .flushCompleted(ticket: 1)), core.due(after: .afterUpdatePerformed)]
        XCTAssertEqual(names(due.compactMap { $0 }), names(released.flushedWork))
        XCTAssertNil(core.due(after: .afterUpdatePerformed))
        XCTAssertEqual(core.runAfterUpdate(.judgeRestoredCalls, storeIsIdle: true), .runNow, "nothing pending: now")
    }

    /// With no stub-written document of a sent call waiting, the work goes behind the cache's updates at once.
    func testWithNoStubWrittenDocumentTheWorkOnlyWaitsForTheCache() {
        var core = ClientCore.scripted()
        let call = core.call("call")
        XCTAssertEqual(
            core.runWhenAllServerDocumentsAreFlushed(.methodDataVisible(id: call.id), storeIsIdle: true), .runNow)
        XCTAssertEqual(
            core.runWhenAllServerDocumentsAreFlushed(.methodDataVisible(id: call.id), storeIsIdle: false),
            .requestFlush(ticket: 1))
    }

    /// A new session's data (reconnect quiescence) drops the work waiting for the old session's server versions: it
    /// is redone for the new session, and nothing of it stays behind.
    func testANewSessionDropsTheWorkWaitingForTheOldSessionsServerVersions() {
        var core = ClientCore.scripted()
        let first = core.call("first")
        core.stubRan(methodID: first.id, originals: [(todo, nil)])
        XCTAssertEqual(core.runWhenAllServerDocumentsAreFlushed(.judgeRestoredCalls, storeIsIdle: true), .queued)
        // Answered, its data not seen yet when the connection is lost: not sent again, so nothing holds the new
        // session's data back.
        _ = core.methodResultReceived(first.id, .success(nil))
        XCTAssertNotNil(core.reconnect(), "nothing to wait for: the new session's data applies at once")
        XCTAssertTrue(core.session.afterUpdate.summary.hasSuffix("0 waiting for server documents"))
        XCTAssertEqual(names(core.releaseDocuments(writtenBy: first.id).flushedWork), [], "dropped")
    }
}
