import EJSON
import MeteorDDP
import XCTest

@testable import DDPTestServer

/// The test server's merge box sends what Meteor's `SessionCollectionView` sends when several subscriptions publish
/// one document.
final class MergeBoxTests: XCTestCase {
    func testASecondSubscriptionAddingExistingFieldsSendsOnlyTheNewOnes() {
        var box = MergeBox()
        XCTAssertEqual(
            box.added(by: "a", collection: "players", id: "ada", fields: ["name": "Ada", "score": 25]),
            .added(collection: "players", id: "ada", fields: ["name": "Ada", "score": 25]))
        XCTAssertEqual(
            box.added(by: "b", collection: "players", id: "ada", fields: ["name": "Ada", "score": 30, "color": "blue"]),
            .changed(collection: "players", id: "ada", fields: ["color": "blue"], cleared: []),
            "fields the first subscription already shows are not sent again (nor as null)")
        XCTAssertNil(box.added(by: "c", collection: "players", id: "ada", fields: ["score": 40]))
    }

    func testChangingAFieldAnotherSubscriptionShowsSendsNothing() {
        var box = MergeBox()
        _ = box.added(by: "a", collection: "players", id: "ada", fields: ["score": 25])
        _ = box.added(by: "b", collection: "players", id: "ada", fields: ["score": 30])
        XCTAssertNil(box.changed(by: "b", collection: "players", id: "ada", fields: ["score": 35], cleared: []))
        XCTAssertEqual(
            box.changed(by: "a", collection: "players", id: "ada", fields: ["score": 26], cleared: []),
            .changed(collection: "players", id: "ada", fields: ["score": 26], cleared: []))
        XCTAssertEqual(
            box.removed(by: "a", collection: "players", id: "ada"),
            .changed(collection: "players", id: "ada", fields: ["score": 35], cleared: []),
            "the other subscription's value shows once the first lets go")
    }
}
