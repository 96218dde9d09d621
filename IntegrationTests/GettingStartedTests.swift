import DDPTestServer
import Foundation
import TestSupport
import XCTest

@testable import GettingStarted

/// The README's walk-through (Examples/GettingStarted) runs against DDPTestServer as the README says it does.
final class GettingStartedTests: XCTestCase {
    func testTheWalkThroughRunsAgainstTheEmbeddedServer() async throws {
        let server = try await DemoServer.start()
        try await withTimeout(30, "the walk-through") { try await walkthrough(url: server.url) }
        let added = server.perform {
            server.collection("players").find { _, fields in fields["name"] == "Grace Hopper" }.count
        }
        XCTAssertEqual(added, 1, "players.add ran once on the server")
        try await server.stop()
    }
}
