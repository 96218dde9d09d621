import DDPTestServer
import Foundation
import MeteorDDP
import TestSupport
import XCTest

/// Meteor's password flows and "log out other clients", over real sockets against DDPTestServer.
final class AccountsFlowsTests: XCTestCase {
    private var server: DDPTestServer!
    private var userID = ""

    override func setUp() async throws {
        server = DDPTestServer()
        try await server.start()
        userID = server.createUser(email: "ada@example.com", password: "correct horse")
    }

    override func tearDown() async throws {
        try await server.stop()
    }

    private func loggedInClient(_ store: (any AccountStore)? = nil, password: String = "correct horse") async throws
        -> DDPClient
    {
        var configuration = DDPClient.Configuration()
        configuration.retryStrategy = RetryStrategy(baseTimeout: 20, exponent: 2, maxTimeout: 200)
        configuration.accountStore = store
        let client = DDPClient(url: server.url, configuration: configuration)
        try await client.connect(timeout: .seconds(10))
        try await withTimeout(10, "login") { try await client.login(email: "ada@example.com", password: password) }
        return client
    }

    /// Waits until `client` has no account (its resume was refused).
    private func loggedOut(_ client: DDPClient) async throws {
        let updates = client.accountUpdates
        try await withTimeout(10, "logged out by the server") {
            for await account in updates where account == nil { return }
        }
    }

    func testChangingThePasswordKeepsThisClientAndLogsTheOthersOut() async throws {
        let phone = try await loggedInClient()
        let laptop = try await loggedInClient()
        let wrong = try await serverRefusal { try await phone.changePassword(old: "wrong", new: "battery staple") }
        XCTAssertEqual(wrong?.error, 403)
        XCTAssertEqual(wrong?.reason, "Incorrect password")
        let token = phone.account?.token
        try await withTimeout(10, "change") {
            try await phone.changePassword(old: "correct horse", new: "battery staple")
        }
        try await loggedOut(laptop)
        XCTAssertEqual(phone.account?.token, token, "this connection keeps its login")
        XCTAssertEqual(server.loginTokenCount, 1)
        let old = try await serverRefusal {
            _ = try await laptop.login(email: "ada@example.com", password: "correct horse")
        }
        XCTAssertEqual(old?.reason, "Incorrect password")
        _ = try await withTimeout(10, "new password") {
            try await laptop.login(email: "ada@example.com", password: "battery staple")
        }
        phone.close()
        laptop.close()
    }

    /// Login events over a real socket: how the user logged in, every reconnect's resume, and a server that refuses a
    /// token its clock says has expired.
    func testLoginEventsSayHowTheUserLoggedInAndWhyTheyWereLoggedOut() async throws {
        var configuration = DDPClient.Configuration()
        configuration.retryStrategy = RetryStrategy(baseTimeout: 20, exponent: 2, maxTimeout: 200)
        let client = DDPClient(url: server.url, configuration: configuration)
        let events = client.loginEvents
        try await client.connect(timeout: .seconds(10))
        _ = try await serverRefusal { _ = try await client.login(email: "ada@example.com", password: "wrong") }
        try await withTimeout(10, "login") {
            _ = try await client.login(email: "ada@example.com", password: "correct horse")
        }
        server.dropAllConnections()
        var received = try await next(3, of: events)
        guard case .loginFailed(let wrong as MeteorError, isResume: false) = received[0] else {
            return XCTFail("\(received[0])")
        }
        XCTAssertEqual(wrong.reason, "Incorrect password")
        guard case .loggedIn(let account, type: .password) = received[1] else { return XCTFail("\(received[1])") }
        XCTAssertEqual(account.userID, userID)
        guard case .loggedIn(_, type: .resume) = received[2] else { return XCTFail("\(received[2])") }

        server.ageLoginTokens(by: 91 * 24 * 3600)
        server.dropAllConnections()
        received = try await next(2, of: events)
        guard case .loginFailed(_, isResume: true) = received[0] else { return XCTFail("\(received[0])") }
        guard case .loggedOut(userID: userID, reason: .tokenExpired(let expired?)) = received[1] else {
            return XCTFail("\(received[1])")
        }
        XCTAssertEqual(expired.reason, "Your session has expired. Please log in again.")
        XCTAssertNil(client.account)
        client.close()
    }

    func testChangingThePasswordNeedsALogin() async throws {
        let client = DDPClient(url: server.url)
        try await client.connect(timeout: .seconds(10))
        do {
            try await client.changePassword(old: "correct horse", new: "x")
            XCTFail("not logged in")
        } catch let error as AccountError {
            XCTAssertEqual(error.kind, .notLoggedIn)
        }
        client.close()
    }

    func testForgottenPasswordResetByTheEmailsTokenLogsInAndReplacesTheStoredLogin() async throws {
        let store = InMemoryAccountStore()
        let other = try await loggedInClient()
        let client = DDPClient(
            url: server.url,
            configuration: {
                var c = DDPClient.Configuration()
                c.accountStore = store
                return c
            }())
        try await client.connect(timeout: .seconds(10))
        let unknown = try await serverRefusal { try await client.forgotPassword(email: "nobody@example.com") }
        XCTAssertEqual(unknown?.reason, "User not found")
        try await withTimeout(10, "forgot") { try await client.forgotPassword(email: "ada@example.com") }
        let email = try XCTUnwrap(server.sentEmails.last)
        XCTAssertEqual(email.kind, .resetPassword)
        XCTAssertEqual(email.to, "ada@example.com")
        XCTAssertTrue(email.url.hasSuffix("/#/reset-password/\(email.token)"), email.url)
        let bad = try await serverRefusal {
            _ = try await client.resetPassword(token: "not-a-token", newPassword: "battery staple")
        }
        XCTAssertEqual(bad?.reason, "Token expired")
        let account = try await withTimeout(10, "reset") {
            try await client.resetPassword(token: email.token, newPassword: "battery staple")
        }
        XCTAssertEqual(account.userID, userID)
        XCTAssertEqual(client.account, account)
        XCTAssertEqual(try store.load(), account, "the stored login is the new one (resumed on reconnect)")
        XCTAssertTrue(server.isEmailVerified(userID: userID, email: "ada@example.com"), "the link proved the address")
        try await loggedOut(other)
        let reused = try await serverRefusal {
            _ = try await client.resetPassword(token: email.token, newPassword: "again")
        }
        XCTAssertEqual(reused?.reason, "Token expired")
        _ = try await withTimeout(10, "new password") {
            try await other.login(email: "ada@example.com", password: "battery staple")
        }
        client.close()
        other.close()
    }

    func testAnExpiredResetTokenIsRefused() async throws {
        let client = DDPClient(url: server.url)
        try await client.connect(timeout: .seconds(10))
        try await withTimeout(10, "forgot") { try await client.forgotPassword(email: "ada@example.com") }
        let token = try XCTUnwrap(server.sentEmails.last?.token)
        server.ageEmailTokens(by: 4 * 24 * 3600)
        let expired = try await serverRefusal {
            _ = try await client.resetPassword(token: token, newPassword: "battery staple")
        }
        XCTAssertEqual(expired?.error, 403)
        XCTAssertEqual(expired?.reason, "Token expired")
        XCTAssertNil(client.account)
        client.close()
    }

    func testAnEnrollmentTokenSetsTheFirstPassword() async throws {
        let newcomer = server.createUser(email: "grace@example.com", password: "unknown to her")
        let token = try XCTUnwrap(server.sendEnrollmentEmail(userID: newcomer))
        XCTAssertEqual(server.sentEmails.last?.kind, .enrollAccount)
        let client = DDPClient(url: server.url)
        try await client.connect(timeout: .seconds(10))
        let account = try await withTimeout(10, "enroll") {
            try await client.resetPassword(token: token, newPassword: "cobol")
        }
        XCTAssertEqual(account.userID, newcomer)
        try await withTimeout(10, "logout") { try await client.logout() }
        _ = try await withTimeout(10, "login") { try await client.login(email: "grace@example.com", password: "cobol") }
        client.close()
    }

    func testVerifyingAnEmailLogsIn() async throws {
        let token = try XCTUnwrap(server.sendVerificationEmail(userID: userID))
        let client = DDPClient(url: server.url)
        try await client.connect(timeout: .seconds(10))
        let unknown = try await serverRefusal { _ = try await client.verifyEmail(token: "not-a-token") }
        XCTAssertEqual(unknown?.reason, "Verify email link expired")
        XCTAssertFalse(server.isEmailVerified(userID: userID, email: "ada@example.com"))
        let account = try await withTimeout(10, "verify") { try await client.verifyEmail(token: token) }
        XCTAssertEqual(account.userID, userID)
        XCTAssertTrue(server.isEmailVerified(userID: userID, email: "ada@example.com"))
        client.close()
    }

    func testLoggingOutOtherClientsKeepsThisOneWithANewTokenAndLogsTheOthersOut() async throws {
        let store = InMemoryAccountStore()
        let phone = try await loggedInClient(store)
        let laptop = try await loggedInClient()
        let laptopEvents = laptop.loginEvents
        let oldToken = try XCTUnwrap(phone.account?.token)
        try await withTimeout(10, "logout others") { try await phone.logoutOtherClients() }
        try await loggedOut(laptop)
        // The laptop says why: its resume was refused, the server no longer knowing its token.
        let events = try await next(2, of: laptopEvents)
        guard case .loginFailed(let refusal as MeteorError, isResume: true) = events[0] else {
            return XCTFail("\(events[0])")
        }
        XCTAssertEqual(refusal.reason, "You've been logged out by the server. Please log in again.")
        guard case .loggedOut(userID: userID, reason: .tokenRevoked) = events[1] else { return XCTFail("\(events[1])") }
        guard case .tokenRevoked? = laptop.logoutReason else {
            return XCTFail("\(String(describing: laptop.logoutReason))")
        }
        let newToken = try XCTUnwrap(phone.account?.token)
        XCTAssertNotEqual(newToken, oldToken)
        XCTAssertEqual(try store.load()?.token, newToken, "the new token is stored")
        XCTAssertEqual(server.loginTokenCount, 1)
        // The laptop does not resume the removed token again: it stays logged out across reconnects.
        XCTAssertNil(laptop.account)
        // The phone resumes with the new token after a reconnect.
        let resumed = server.receivedMessages.count
        server.dropAllConnections()
        let server = self.server!
        _ = try await withTimeout(10, "resume with the new token") {
            await server.waitForMessage { message in
                guard case .method(_, "login", let params, _) = message else { return false }
                return params.first?["resume"]?.stringValue == newToken
            }
        }
        XCTAssertGreaterThan(server.receivedMessages.count, resumed)
        XCTAssertEqual(phone.account?.token, newToken)
        phone.close()
        laptop.close()
    }
}
