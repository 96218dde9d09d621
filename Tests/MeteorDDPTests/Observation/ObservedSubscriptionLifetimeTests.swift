import Dispatch
import EJSON
import Foundation
import XCTest

@_spi(Testing) @testable import MeteorDDP

/// The SwiftUI pattern of the documentation (`@State var sub = client.subscribe(…).observed()`, the handle dropped)
/// keeps its subscription and documents for as long as the model lives, and lets go when it goes.
final class ObservedSubscriptionLifetimeTests: XCTestCase {
    private func unsubscribed(_ harness: ClientHarness) -> [String] {
        harness.sent.compactMap { if case .unsub(let id) = $0 { id } else { nil } }
    }

    func testTheModelKeepsItsSubscriptionPastTheNotInUseTimeoutAndReleasesItWhenItGoes() throws {
        // No heartbeat in the minutes the manual clock jumps: its ping's timeout (the in-memory server never answers)
        // would drop the connection, and the unsub would wait for the next one (the test failed 1 run in 5 so).
        let harness = ClientHarness { $0.heartbeatInterval = .seconds(3_600) }
        harness.establishConnection()
        let queue = DispatchQueue(label: "view model")
        // As the DocC sample does: the handle is not kept, only the model.
        var model: ObservedSubscription? = harness.client.subscribe("todos").observed(scheduler: .queue(queue))
        guard case .sub(let id, _, _)? = harness.sent.last else { return XCTFail("no sub") }
        harness.receive(.added(collection: "todos", id: "t1", fields: ["text": "milk"]))
        harness.receive(.ready(subscriptionIDs: [id]))
        harness.flushData()
        XCTAssertEqual(model?.subscription?.id, id)

        harness.advance(by: .seconds(181))
        XCTAssertEqual(unsubscribed(harness), [], "no unsub while the model lives")
        XCTAssertNotNil(harness.document("todos", "t1"))
        XCTAssertEqual(model?.subscription?.status, .ready)

        // The model's last reference may be a moment on another thread (its task following the status, or its
        // scheduler's block setting a value, each holds it while it runs): the handle goes when that one lets go, and
        // its release reaches the client queue, which starts the notInUseTimeout, then.
        model = nil
        let released = XCTNSPredicateExpectation(
            predicate: NSPredicate { _, _ in harness.scheduler.pendingDelays.contains(.seconds(180)) }, object: nil)
        wait(for: [released], timeout: 10)
        harness.advance(by: .seconds(179))
        XCTAssertEqual(unsubscribed(harness), [], "the usual notInUseTimeout after the model went")
        harness.advance(by: .seconds(1))
        XCTAssertEqual(unsubscribed(harness), [id], "released with the model")
        // The server then takes its documents back.
        harness.receive(.removed(collection: "todos", id: "t1"))
        harness.flushData()
        XCTAssertNil(harness.document("todos", "t1"))
    }
}
