import DDPTestServer
import Foundation
import MeteorDDP
import TestSupport
import XCTest

/// A DDPTestServer publication that returns no cursor and never calls `ready()` leaves its subscriber waiting: the
/// server says so in a warning, a second after.
final class PublicationReadyWarningTests: XCTestCase {
    func testAPublicationThatNeverCallsReadyIsWarnedAboutAfterASecond() async throws {
        let warned = expectation(description: "a warning")
        let log = LogRecorder { warned.fulfill() }
        var configuration = DDPTestServer.Configuration()
        configuration.logger = log.logger
        configuration.logger.logLevel = .warning
        let server = DDPTestServer(configuration: configuration)
        try await server.start()
        server.publish("forgetful") { _ in [] }
        server.publish("byHand") { context in
            context.added("things", id: "t1", fields: [:])
            context.ready()
            return []
        }
        let client = DDPClient(url: server.url)
        try await client.connect(timeout: .seconds(10))
        let byHand = client.subscribe("byHand")
        try await withTimeout(10, "byHand ready") { try await byHand.ready() }
        let forgetful = client.subscribe("forgetful")
        await fulfillment(of: [warned], timeout: 10)
        XCTAssertEqual(log.lines.count, 1, "\(log.lines)")
        let line = try XCTUnwrap(log.lines.first)
        XCTAssertTrue(line.contains("publication 'forgetful' returned no cursor and has not called ready()"), line)
        XCTAssertTrue(line.contains("subscription=\(forgetful.id)"), line)
        XCTAssertEqual(forgetful.status, .pending)
        client.close()
        try await server.stop()
    }
}
