import EJSON
import Foundation
import TestSupport
import XCTest

@_spi(Testing) @testable import MeteorDDP

/// A login completes only once its user's document is in the cache (Meteor's `callLoginMethod` waits for
/// `Meteor.user()`), with a bound; and the account calls refuse locally what Meteor's client refuses, sending nothing.
final class LoginUserDocumentWaitTests: XCTestCase {
    private let result: EJSONValue = [
        "id": "lovelace", "token": "tok1", "tokenExpires": .date(millisecondsSince1970: 4_102_444_800_000)
    ]

    /// A connected client whose server answers the login as Meteor 3 does: `updated`, then `result`; the user's
    /// document comes later (if the test sends it).
    private func answeredLogin() async throws -> (ClientHarness, Task<Account, any Error>, LoginEvents) {
        let harness = ClientHarness(publishesLoggedInUser: false)
        harness.establishConnection()
        let events = harness.client.loginEvents
        let login = Task { try await harness.client.login(email: "ada@example.com", password: "correct") }
        let transport = harness.transport
        try await withTimeout(5, "login sent") {
            await transport.waitUntilSent(count: 1) { if case .method = $0 { true } else { false } }
        }
        harness.receive(.updated(methodIDs: ["1"]))
        harness.receive(.result(id: "1", result: result, error: nil))
        harness.flushData()
        // Whatever the result's completion does on the callback queue and back on the client queue has run.
        harness.client.callbackQueue.sync {}
        harness.settle()
        return (harness, login, events)
    }

    func testALoginReturnsOnlyOnceItsUserIsInTheCache() async throws {
        let (harness, login, events) = try await answeredLogin()
        XCTAssertEqual(harness.client.account?.userID, "lovelace", "logged in (Meteor's userId) at the result")
        XCTAssertTrue(harness.client.loggingIn, "still logging in: no user yet")
        XCTAssertNil(harness.client.user)
        harness.receive(.added(collection: "users", id: "lovelace", fields: ["username": "ada"]))
        harness.flushData()
        let account = try await withTimeout(5, "the login returns") { try await login.value }
        XCTAssertEqual(account.userID, "lovelace")
        XCTAssertEqual(harness.client.user?["username"], "ada")
        XCTAssertFalse(harness.client.loggingIn)
        let received = try await next(1, of: events)
        guard case .loggedIn(let loggedIn, _) = received[0] else { return XCTFail("\(received)") }
        XCTAssertEqual(loggedIn.userID, "lovelace")
    }

    func testALoginWhoseUserNeverComesFailsAfterTheBoundWithAClearError() async throws {
        let (harness, login, _) = try await answeredLogin()
        harness.advance(by: .seconds(29))
        XCTAssertTrue(harness.client.loggingIn, "not yet")
        harness.advance(by: .seconds(1))
        do {
            _ = try await withTimeout(5, "the login fails") { try await login.value }
            XCTFail("no user document came")
        } catch let error as AccountError {
            XCTAssertEqual(error.kind, .userDocumentNotReceived)
            XCTAssertTrue(error.message.contains("did not publish the user's document"), error.message)
        }
        XCTAssertFalse(harness.client.loggingIn)
        XCTAssertEqual(harness.client.account?.userID, "lovelace", "the server did log the user in")
    }

    func testClosingTheClientEndsALoginWaitingForItsUser() async throws {
        let (harness, login, _) = try await answeredLogin()
        harness.client.close()
        harness.settle()
        do {
            _ = try await withTimeout(5, "the login fails") { try await login.value }
            XCTFail("closed")
        } catch let error as DDPError {
            XCTAssertEqual(error.code, .clientClosed)
        }
    }

    func testALogoutWhileTheLoginWaitsForItsUserFailsTheLogin() async throws {
        let (harness, login, _) = try await answeredLogin()
        let logout = Task { try await harness.client.logout() }
        let transport = harness.transport
        try await withTimeout(5, "logout sent") {
            await transport.waitUntilSent(count: 2) { if case .method = $0 { true } else { false } }
        }
        harness.receive(.result(id: "2", result: nil, error: nil))
        harness.receive(.updated(methodIDs: ["2"]))
        harness.flushData()
        try await withTimeout(5, "logout") { try await logout.value }
        // The user's document never comes; the clock does not move: the logout itself ends the wait.
        do {
            _ = try await withTimeout(5, "the login fails") { try await login.value }
            XCTFail("logged out meanwhile")
        } catch let error as AccountError {
            XCTAssertEqual(error.kind, .userDocumentNotReceived)
            XCTAssertTrue(error.message.contains("logged out or logged in again"), error.message)
        }
        XCTAssertFalse(harness.client.loggingIn)
    }

    func testLoggingInStaysTrueWhileAnotherLoginIsInProgress() async throws {
        let (harness, first, _) = try await answeredLogin()
        // A second login (the first's method is answered: it goes out) fails while the first waits for its user.
        let second = Task { try await harness.client.login(email: "ada@example.com", password: "wrong") }
        let transport = harness.transport
        try await withTimeout(5, "the second login sent") {
            await transport.waitUntilSent(count: 2) { if case .method = $0 { true } else { false } }
        }
        harness.receive(.result(id: "2", result: nil, error: MeteorError(error: 403, reason: "Incorrect password")))
        harness.receive(.updated(methodIDs: ["2"]))
        _ = try? await withTimeout(5, "the second login fails") { try await second.value }
        harness.settle()
        XCTAssertTrue(harness.client.loggingIn, "the first is still in progress")
        harness.receive(.added(collection: "users", id: "lovelace", fields: [:]))
        harness.flushData()
        _ = try await withTimeout(5, "the first login returns") { try await first.value }
        XCTAssertFalse(harness.client.loggingIn)
    }

    // MARK: - Meteor's local checks (accounts-password, accounts-2fa, accounts-passwordless clients)

    private func refusedLocally(
        _ harness: ClientHarness, _ reason: String, _ body: @escaping @Sendable () async throws -> Void
    ) async throws {
        do {
            try await withTimeout(5, reason) { try await body() }
            XCTFail("\(reason): not refused")
        } catch let error as MeteorError {
            XCTAssertEqual(error.error, 400, reason)
            XCTAssertEqual(error.reason, reason)
        }
        harness.settle()
        XCTAssertFalse(harness.sent.contains { if case .method = $0 { true } else { false } }, "\(reason): sent")
    }

    func testTheAccountCallsRefuseWhatMeteorsClientRefusesWithoutSendingIt() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let client = harness.client
        try await refusedLocally(harness, "Password may not be empty") {
            _ = try await client.createUser(email: "ada@example.com", password: "")
        }
        try await refusedLocally(harness, "Must pass options.email") { try await client.forgotPassword(email: "") }
        try await refusedLocally(harness, "Need to pass token") { _ = try await client.verifyEmail(token: "") }
        try await refusedLocally(harness, "Password may not be empty") {
            _ = try await client.resetPassword(token: "t", newPassword: "")
        }
        let twoFactor = "token is required to use loginWithPasswordAnd2faCode and must be a string"
        try await refusedLocally(harness, twoFactor) {
            _ = try await client.login(email: "ada@example.com", password: "pw", code: "")
        }
        try await refusedLocally(harness, twoFactor) {
            _ = try await client.login(username: "ada", password: "pw", code: "")
        }
        try await refusedLocally(harness, "Must pass selector") { _ = try await client.requestLoginToken(for: "") }
        try await refusedLocally(harness, "Must provide a code to validate") { try await client.enable2fa(code: "") }
    }
}
