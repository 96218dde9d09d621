import EJSON
import Foundation
import TestSupport
import XCTest

@testable import MeteorDDP

/// Login events (Meteor's `onLogin`, `onLoginFailure`, `onLogout`) and token expiry, driven frame by frame.
final class LoginEventTests: XCTestCase {
    /// The harness's clock starts at 1,700,000,000 s; this token lasts two hours from then.
    private let expiresInTwoHours = Date(timeIntervalSince1970: 1_700_000_000 + 7_200)
    private let loggedOutByTheServer = MeteorError(
        error: .number(403), reason: "You've been logged out by the server. Please log in again.")

    private func loginResult(token: String = "tok1", type: String = "password", expires: Date? = nil) -> EJSONValue {
        [
            "id": "lovelace", "token": .string(token), "tokenExpires": .date(expires ?? expiresInTwoHours),
            "type": .string(type)
        ]
    }

    private func methods(_ harness: ClientHarness) -> [(id: String, name: String, params: [EJSONValue])] {
        harness.sent.compactMap {
            if case .method(let id, let name, let params, _) = $0 { (id, name, params) } else { nil }
        }
    }

    /// Logs in with a password, the server answering with `result`; returns the login's method id.
    @discardableResult
    private func logIn(_ harness: ClientHarness, result: EJSONValue? = nil, error: MeteorError? = nil) async throws
        -> String
    {
        let before = methods(harness).count
        let login = Task { try await harness.client.login(email: "ada@example.com", password: "correct") }
        await harness.transport.waitUntilSent(count: before + 1) { if case .method = $0 { true } else { false } }
        let id = methods(harness)[before].id
        harness.receive(.result(id: id, result: error == nil ? (result ?? loginResult()) : nil, error: error))
        harness.receive(.updated(methodIDs: [id]))
        _ = try? await value(of: login)
        return id
    }

    /// A logged-in client with a stream of its login events: the first event (the login) already happened.
    private func loggedIn(_ store: (any AccountStore)? = nil) async throws -> (ClientHarness, LoginEvents) {
        let harness = ClientHarness { $0.accountStore = store }
        harness.establishConnection()
        let events = harness.client.loginEvents
        try await logIn(harness)
        return (harness, events)
    }

    /// The socket drops and reopens; the server answers the resume the client sends first.
    private func answerResume(_ harness: ClientHarness, result: EJSONValue? = nil, error: MeteorError? = nil) {
        harness.dropAndReopen()
        harness.receive(.connected(session: "S2"))
        let resume = methods(harness)[0].id
        harness.receive(.result(id: resume, result: result, error: error))
        harness.receive(.updated(methodIDs: [resume]))
    }

    func testLoginsFailuresAndLogoutsArriveInOrderWithHowTheUserLoggedIn() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let events = harness.client.loginEvents
        try await logIn(harness, error: MeteorError(error: .number(403), reason: "Incorrect password"))
        try await logIn(harness)
        let logout = Task { try await harness.client.logout() }
        await harness.transport.waitUntilSent(count: 3) { if case .method = $0 { true } else { false } }
        harness.receive(.result(id: "3", result: nil, error: nil))
        harness.receive(.updated(methodIDs: ["3"]))
        try await value(of: logout)

        let received = try await next(3, of: events)
        guard case .loginFailed(let error as MeteorError, isResume: false) = received[0] else {
            return XCTFail("\(received[0])")
        }
        XCTAssertEqual(error.reason, "Incorrect password")
        guard case .loggedIn(let account, type: .password) = received[1] else { return XCTFail("\(received[1])") }
        XCTAssertEqual(account.token, "tok1")
        guard case .loggedOut(userID: "lovelace", reason: .app) = received[2] else { return XCTFail("\(received[2])") }
        guard case .app? = harness.client.logoutReason else {
            return XCTFail("\(String(describing: harness.client.logoutReason))")
        }
    }

    /// Another client's `logoutOtherClients` (or a password change elsewhere) removes the token: the server closes the
    /// connection and refuses the resume. The client logs out once, says why, and never sends that token again.
    func testARefusedResumeLogsOutOnceSayingTheTokenWasRevokedAndIsNotSentAgain() async throws {
        let store = InMemoryAccountStore()
        let (harness, events) = try await loggedIn(store)
        answerResume(harness, error: loggedOutByTheServer)
        XCTAssertEqual(methods(harness).map(\.params), [[["resume": "tok1"]]], "the resume went out first")
        let received = try await next(3, of: events)
        guard case .loggedIn(_, type: .password) = received[0] else { return XCTFail("\(received[0])") }
        guard case .loginFailed(let failure as MeteorError, isResume: true) = received[1] else {
            return XCTFail("\(received[1])")
        }
        XCTAssertEqual(failure.reason, loggedOutByTheServer.reason)
        guard case .loggedOut(userID: "lovelace", reason: .tokenRevoked) = received[2] else {
            return XCTFail("\(received[2])")
        }
        // Each event comes after the state it reports.
        XCTAssertNil(harness.client.account)
        XCTAssertNil(try store.load())
        guard case .tokenRevoked(let error)? = harness.client.logoutReason else {
            return XCTFail("\(String(describing: harness.client.logoutReason))")
        }
        XCTAssertEqual(error.reason, loggedOutByTheServer.reason)

        harness.dropAndReopen()
        harness.receive(.connected(session: "S3"))
        XCTAssertEqual(methods(harness).count, 0, "the removed token is not resumed again")
        try await logIn(harness, result: loginResult(token: "tok2"))
        // Logged out once: the next event is the new login, not a second logout.
        let later = try await next(1, of: events)
        guard case .loggedIn(let account, type: .password) = later[0] else { return XCTFail("\(later[0])") }
        XCTAssertEqual(account.token, "tok2")
        XCTAssertNil(harness.client.logoutReason, "logged in again")
    }

    /// Meteor's resume handler refuses a token past its expiry by the server's clock with its own message.
    func testAResumeRefusedForExpiryByTheServerSaysTheTokenExpired() async throws {
        let (harness, events) = try await loggedIn()
        let expired = MeteorError(error: .number(403), reason: "Your session has expired. Please log in again.")
        answerResume(harness, error: expired)
        let received = try await next(3, of: events)
        guard case .loggedOut(userID: "lovelace", reason: .tokenExpired(let error?)) = received[2] else {
            return XCTFail("\(received[2])")
        }
        XCTAssertEqual(error.reason, expired.reason)
    }

    /// Every reconnect's successful resume is a login (Meteor runs `onLogin` for it), of type `resume`.
    func testAReconnectsResumeIsALoginOfTypeResume() async throws {
        let (harness, events) = try await loggedIn()
        answerResume(harness, result: loginResult(type: "resume"))
        let received = try await next(2, of: events)
        guard case .loggedIn(_, type: .resume) = received[1] else { return XCTFail("\(received[1])") }
    }

    /// Meteor's `_unstoreLoginTokenIfExpiresSoon` at start-up: an expired stored token is never sent; the client
    /// starts logged out, says why, and clears the store.
    func testAnExpiredStoredTokenIsNeverSentAndTheClientStartsLoggedOutSayingWhy() throws {
        for expires in [
            Date(timeIntervalSince1970: 1_700_000_000 - 60), Date(timeIntervalSince1970: 1_700_000_000 + 60)
        ] {
            let store = InMemoryAccountStore(Account(userID: "lovelace", token: "stored", tokenExpires: expires))
            let harness = ClientHarness { $0.accountStore = store }
            XCTAssertNil(harness.client.account)
            XCTAssertFalse(harness.client.loggingIn)
            guard case .tokenExpired(nil)? = harness.client.logoutReason else {
                return XCTFail("\(String(describing: harness.client.logoutReason))")
            }
            XCTAssertNil(try store.load(), "the expired token is not kept")
            harness.establishConnection()
            harness.dropAndReopen()
            harness.receive(.connected(session: "S2"))
            XCTAssertEqual(methods(harness).count, 0, "the token is never sent")
        }
    }

    /// A token that comes within Meteor's margin of its expiry while the client is offline is dropped instead of
    /// resumed at the reconnect (accounts_client.js's `onReconnect`).
    func testATokenExpiringWhileOfflineIsDroppedBeforeTheResume() async throws {
        let store = InMemoryAccountStore()
        let harness = ClientHarness { $0.accountStore = store }
        harness.establishConnection()
        let events = harness.client.loginEvents
        // Expires an hour and a second after the clock's start: two seconds later, within Meteor's one-hour margin.
        try await logIn(harness, result: loginResult(expires: Date(timeIntervalSince1970: 1_700_000_000 + 3_601)))
        harness.transport.fail()
        harness.settle()
        harness.transport.clearSentFrames()
        harness.advance(by: .seconds(2))
        harness.transport.open()
        harness.settle()
        harness.receive(.connected(session: "S2"))
        XCTAssertEqual(methods(harness).count, 0, "no resume with a token about to expire")
        XCTAssertNil(harness.client.account)
        XCTAssertNil(try store.load())
        let received = try await next(2, of: events)
        guard case .loggedOut(userID: "lovelace", reason: .tokenExpired(nil)) = received[1] else {
            return XCTFail("\(received[1])")
        }
    }

    /// A login result the client cannot use fails the login and, for a client that was logged in, logs it out with
    /// that error.
    func testAnUnusableResumeResultFailsTheLoginAndLogsOutWithTheError() async throws {
        let (harness, events) = try await loggedIn()
        answerResume(harness, result: ["id": "lovelace"])
        let received = try await next(3, of: events)
        guard case .loginFailed(let error as AccountError, isResume: true) = received[1] else {
            return XCTFail("\(received[1])")
        }
        XCTAssertEqual(error.kind, .malformedLoginResult)
        guard case .loggedOut(userID: "lovelace", reason: .loginFailed(let reason as AccountError)) = received[2] else {
            return XCTFail("\(received[2])")
        }
        XCTAssertEqual(reason.kind, .malformedLoginResult)
    }

    func testTheStreamEndsWhenTheClientCloses() async throws {
        let harness = ClientHarness()
        let events = harness.client.loginEvents
        harness.client.close()
        try await withTimeout(5, "stream ends") {
            for await event in events { XCTFail("no event expected: \(event)") }
        }
    }
}
