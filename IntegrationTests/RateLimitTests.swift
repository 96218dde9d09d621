import DDPTestServer
import Foundation
import MeteorDDP
import TestSupport
import XCTest

/// Meteor's DDPRateLimiter refuses with `too-many-requests` and the time to wait: a typed delay for every call,
/// a login included, and for a subscription.
final class RateLimitTests: XCTestCase {
    func testARateLimitedCallLoginAndSubscriptionSayHowLongToWait() async throws {
        let server = DDPTestServer()
        try await server.start()
        server.createUser(email: "ada@example.com", password: "correct horse")
        server.method("messages.send") { _ in nil }
        server.publish("messages") { _ in [Cursor(collection: "messages")] }
        server.limitMethod("messages.send", requests: 2, per: .seconds(10))
        server.limitMethod("login", requests: 1, per: .seconds(10))
        server.limitSubscription("messages", requests: 1, per: .seconds(10))
        let client = DDPClient(url: server.url)
        try await client.connect(timeout: .seconds(10))
        for _ in 0..<2 { _ = try await withTimeout(10, "allowed") { try await client.call("messages.send") } }
        do {
            _ = try await withTimeout(10, "limited") { try await client.call("messages.send") }
            XCTFail("the third call is over the limit")
        } catch let error as MeteorError where error.isRateLimited {
            let wait = try XCTUnwrap(error.retryAfter)
            XCTAssertGreaterThan(wait, .seconds(8))
            XCTAssertLessThanOrEqual(wait, .seconds(10))
            XCTAssertTrue(error.reason?.contains("too many requests") ?? false)
        }
        do {
            _ = try await withTimeout(10, "first login") {
                try await client.login(email: "ada@example.com", password: "wrong")
            }
            XCTFail("wrong password")
        } catch let error as MeteorError {
            XCTAssertEqual(error.reason, "Incorrect password")
            XCTAssertNil(error.retryAfter)
        }
        do {
            _ = try await withTimeout(10, "second login") {
                try await client.login(email: "ada@example.com", password: "correct horse")
            }
            XCTFail("the second login is over the limit")
        } catch let error as MeteorError where error.isRateLimited {
            XCTAssertNotNil(error.retryAfter)
        }
        try await withTimeout(10, "first subscription") { try await client.subscribe("messages", params: [1]).ready() }
        do {
            try await withTimeout(10, "second subscription") {
                try await client.subscribe("messages", params: [2]).ready()
            }
            XCTFail("the second subscription is over the limit")
        } catch let error as MeteorError where error.isRateLimited {
            XCTAssertNotNil(error.retryAfter)
        }
        client.close()
        try await server.stop()
    }
}
