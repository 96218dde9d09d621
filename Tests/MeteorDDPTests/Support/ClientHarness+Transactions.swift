import Dispatch
import EJSON
import Foundation
import XCTest

@testable import MeteorDDP

extension ClientHarness {
    /// The app's transaction did not return: a deadlock.
    struct Deadlock: Error, CustomStringConvertible {
        var description: String { "performUpdates did not return within 10 s: a deadlock" }
    }

    /// Runs `body` inside the app's own `database.performUpdates` on a new thread, while the client queue runs a
    /// stubbed call (`touch`, which inserts into `players`) that waits for this transaction's write lock, the
    /// interleaving of issue 47's deadlock. Throws ``Deadlock`` (instead of hanging the suite on the blocked client
    /// queue) if `performUpdates` does not return within 10 s; otherwise lets the client queue finish.
    func insideATransactionWhileAStubWaitsForTheLock(_ body: @escaping @Sendable () -> Void) throws {
        let client = self.client
        client.defineStub("touch") { context in
            try context.collection("players").insert(["n": 1])
            return nil
        }
        let clientGate = DispatchSemaphore(value: 0)
        client.queue.async { clientGate.wait() }
        client.queue.async { _ = try? client.call("touch") { _ in } }
        let returned = XCTestExpectation(description: "performUpdates returned")
        Thread.detachNewThread {
            client.database.performUpdates {
                client.database.apply(.added(DocumentKey(collectionName: "local", documentID: "x"), [:]))
                clientGate.signal() // the client queue's stub now waits for this transaction's lock
                body()
            }
            returned.fulfill()
        }
        guard XCTWaiter().wait(for: [returned], timeout: 10) == .completed else { throw Deadlock() }
        settle()
    }
}
