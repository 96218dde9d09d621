import DDPTestServer
import EJSON
import Foundation
import MeteorDDP
import TestSupport
import XCTest

/// Every login returns, emits `.loggedIn` and clears `loggingIn` only once its user's document is in the cache
/// (Meteor's client waits for `Meteor.user()`), against a server that publishes the user after the login's
/// `updated` and `result`, as Meteor 3 does (DDPTestServer's `republishesAfterLogin`).
final class LoginUserDocumentTests: XCTestCase {
    private var server: DDPTestServer!
    private var userID = ""

    override func setUp() async throws {
        server = DDPTestServer()
        try await server.start()
        // Long enough that a login returning at its result would certainly return before the user's document.
        server.republishesAfterLogin = .milliseconds(150)
        userID = server.createUser(email: "ada@example.com", password: "correct horse")
    }

    override func tearDown() async throws {
        try await server.stop()
    }

    private func connected() async throws -> DDPClient {
        var configuration = DDPClient.Configuration()
        configuration.retryStrategy = RetryStrategy(baseTimeout: 20, exponent: 2, maxTimeout: 200)
        let client = DDPClient(url: server.url, configuration: configuration)
        try await client.connect(timeout: .seconds(10))
        return client
    }

    /// Runs a login and checks what the app sees the moment it returns, and that `.loggedIn` came with the user.
    @discardableResult
    private func logIn(
        _ what: String, on client: DDPClient, _ login: @escaping @Sendable () async throws -> Account
    ) async throws -> Account {
        let events = client.loginEvents
        let userAtLoggedIn = Task { () -> Document? in
            for await event in events { if case .loggedIn = event { return client.user } }
            return nil
        }
        let account = try await withTimeout(10, what) { try await login() }
        XCTAssertEqual(client.user?.id, account.userID, "\(what): the user's document is there when it returns")
        XCTAssertFalse(client.loggingIn, what)
        let atEvent = try await withTimeout(10, "\(what): .loggedIn") { await userAtLoggedIn.value }
        XCTAssertEqual(atEvent?.id, account.userID, "\(what): and when .loggedIn is emitted")
        return account
    }

    func testEveryPasswordLoginReturnsWithItsUser() async throws {
        let client = try await connected()
        try await logIn("password", on: client) {
            try await client.login(email: "ada@example.com", password: "correct horse")
        }
        let token = try XCTUnwrap(client.account?.token)
        let other = try await connected()
        try await logIn("resume token", on: other) { try await other.login(resumeToken: token) }
        other.close()
        try await withTimeout(10, "logout") { try await client.logout() }
        XCTAssertNil(client.user)

        try await logIn("createUser", on: client) {
            try await client.createUser(email: "grace@example.com", password: "cobol")
        }
        try await withTimeout(10, "logout") { try await client.logout() }

        try await withTimeout(10, "forgot") { try await client.forgotPassword(email: "ada@example.com") }
        let reset = try XCTUnwrap(server.sentEmails.last?.token)
        try await logIn("resetPassword", on: client) {
            try await client.resetPassword(token: reset, newPassword: "battery staple")
        }
        try await withTimeout(10, "logout") { try await client.logout() }

        let newcomer = server.createUser(email: "alan@example.com", password: "unknown to him")
        let enrollment = try XCTUnwrap(server.sendEnrollmentEmail(userID: newcomer))
        try await logIn("enrollment", on: client) {
            try await client.resetPassword(token: enrollment, newPassword: "enigma")
        }
        try await withTimeout(10, "logout") { try await client.logout() }

        let verification = try XCTUnwrap(server.sendVerificationEmail(userID: userID))
        try await logIn("verifyEmail", on: client) { try await client.verifyEmail(token: verification) }
        let emails = client.user?["emails"]?.arrayValue
        XCTAssertEqual(emails?.first?["verified"], true, "the verified document, not the one before")
        client.close()
    }

    func testTwoFactorPasswordlessAndOAuthLoginsReturnWithTheirUser() async throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        server.twoFactorDate = now
        let client = try await connected()
        try await logIn("password", on: client) {
            try await client.login(email: "ada@example.com", password: "correct horse")
        }
        let activation = try await withTimeout(10, "QR code") {
            try await client.generate2faActivationQRCode(appName: "Todos")
        }
        let code = try XCTUnwrap(TOTP.code(secret: activation.secret, at: now))
        try await withTimeout(10, "enable") { try await client.enable2fa(code: code) }
        try await withTimeout(10, "logout") { try await client.logout() }
        try await logIn("2FA", on: client) {
            try await client.login(email: "ada@example.com", password: "correct horse", code: code)
        }
        try await withTimeout(10, "logout") { try await client.logout() }

        server.createUser(email: "grace@example.com", password: "unused")
        try await withTimeout(10, "request") { _ = try await client.requestLoginToken(for: "grace@example.com") }
        let loginCode = try XCTUnwrap(server.sentEmails.last?.token)
        try await logIn("passwordless", on: client) {
            try await client.login(selector: "grace@example.com", token: loginCode)
        }
        try await withTimeout(10, "logout") { try await client.logout() }

        server.addPendingOAuthCredential(
            token: "credential-1", secret: "secret-1", service: "github", serviceData: ["id": 42, "username": "ada"])
        try await logIn("OAuth", on: client) {
            try await client.login(oauthCredentialToken: "credential-1", credentialSecret: "secret-1")
        }
        client.close()
    }

    func testAReconnectsResumeEmitsLoggedInWithItsUser() async throws {
        let client = try await connected()
        try await logIn("password", on: client) {
            try await client.login(email: "ada@example.com", password: "correct horse")
        }
        let events = client.loginEvents
        let userAtResume = Task { () -> Document? in
            for await event in events { if case .loggedIn(_, type: "resume") = event { return client.user } }
            return nil
        }
        server.dropAllConnections()
        let user = try await withTimeout(10, "the resume's .loggedIn") { await userAtResume.value }
        XCTAssertEqual(user?.id, userID)
        client.close()
    }
}
