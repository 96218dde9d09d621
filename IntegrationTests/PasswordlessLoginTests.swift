import DDPTestServer
import Foundation
import MeteorDDP
import TestSupport
import XCTest

/// accounts-passwordless: a one-time code by e-mail, then a login with it, over a real socket.
final class PasswordlessLoginTests: XCTestCase {
    private var server: DDPTestServer!

    override func setUp() async throws {
        server = DDPTestServer()
        try await server.start()
    }

    override func tearDown() async throws {
        try await server.stop()
    }

    private func connected() async throws -> DDPClient {
        let client = DDPClient(url: server.url)
        try await client.connect(timeout: .seconds(10))
        return client
    }

    func testTheEmailedCodeLogsInOnceAndVerifiesTheAddress() async throws {
        let userID = server.createUser(email: "ada@example.com", password: "unused")
        let client = try await connected()
        let events = client.loginEvents
        let created = try await withTimeout(10, "request") {
            try await client.requestLoginToken(for: "ada@example.com")
        }
        XCTAssertFalse(created)
        let email = try XCTUnwrap(server.sentEmails.last)
        XCTAssertEqual(email.kind, .loginToken)
        XCTAssertEqual(email.token.count, 6)
        let wrong = try await serverRefusal { _ = try await client.login(selector: "ada@example.com", token: "000000") }
        XCTAssertEqual(wrong?.reason, "Email or token mismatch")
        let account = try await withTimeout(10, "login") {
            try await client.login(selector: "ada@example.com", token: email.token.lowercased())
        }
        XCTAssertEqual(account.userID, userID)
        XCTAssertEqual(client.account, account)
        let received = try await next(2, of: events)
        guard case .loggedIn(_, type: .passwordless) = received[1] else { return XCTFail("\(received[1])") }
        XCTAssertTrue(server.isEmailVerified(userID: userID, email: "ada@example.com"))
        let again = try await serverRefusal {
            _ = try await client.login(selector: "ada@example.com", token: email.token)
        }
        XCTAssertEqual(again?.reason, "User has no token set", "a code logs in once")
        client.close()
    }

    func testAnUnknownUserIsCreatedFromItsDataUnlessThatIsDisabled() async throws {
        let client = try await connected()
        let refused = try await serverRefusal {
            _ = try await client.requestLoginToken(for: .email("grace@example.com"), userCreationDisabled: true)
        }
        XCTAssertEqual(refused?.reason, "User not found")
        let created = try await withTimeout(10, "request") {
            try await client.requestLoginToken(
                for: .email("grace@example.com"), userData: ["email": "grace@example.com"])
        }
        XCTAssertTrue(created)
        let code = try XCTUnwrap(server.sentEmails.last?.token)
        _ = try await withTimeout(10, "login") {
            try await client.login(selector: .email("grace@example.com"), token: code)
        }
        client.close()
    }

    func testAnExpiredCodeIsRefused() async throws {
        server.createUser(email: "ada@example.com", password: "unused")
        let client = try await connected()
        try await withTimeout(10, "request") { _ = try await client.requestLoginToken(for: "ada@example.com") }
        let code = try XCTUnwrap(server.sentEmails.last?.token)
        server.ageLoginCodes(by: 3601)
        let expired = try await serverRefusal { _ = try await client.login(selector: "ada@example.com", token: code) }
        XCTAssertEqual(expired?.error, 403)
        XCTAssertEqual(expired?.reason, "Expired token")
        XCTAssertNil(client.account)
        client.close()
    }
}
