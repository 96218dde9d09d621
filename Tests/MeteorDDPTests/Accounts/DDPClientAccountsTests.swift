import EJSON
import Foundation
import XCTest

@testable import MeteorDDP

final class DDPClientAccountsTests: XCTestCase {
    private let loginResult: EJSONValue = [
        "id": "lovelace", "token": "tok1", "tokenExpires": .date(millisecondsSince1970: 4_102_444_800_000)
    ]

    private func methods(_ harness: ClientHarness) -> [(id: String, name: String, params: [EJSONValue])] {
        harness.sent.compactMap {
            if case .method(let id, let name, let params, _) = $0 { (id, name, params) } else { nil }
        }
    }

    /// Waits until the client has sent `count` method messages in all (the transport wakes the test; no polling).
    private func waitForMethods(_ harness: ClientHarness, count: Int) async {
        await harness.transport.waitUntilSent(count: count) { if case .method = $0 { true } else { false } }
    }

    private func loggedIn(_ store: (any AccountStore)? = nil) async throws -> ClientHarness {
        let harness = ClientHarness { $0.accountStore = store }
        harness.establishConnection()
        let login = Task { try await harness.client.login(email: "ada@example.com", password: "correct") }
        await waitForMethods(harness, count: 1)
        harness.receive(.updated(methodIDs: ["1"]))
        harness.receive(.result(id: "1", result: loginResult, error: nil))
        _ = try await value(of: login)
        return harness
    }

    func testLoggingInWithEmailSendsTheDigestAsAWaitMethodAndSetsTheAccount() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let login = Task { try await harness.client.login(email: "ada@example.com", password: "correct") }
        await waitForMethods(harness, count: 1)
        XCTAssertTrue(harness.client.loggingIn)
        let sent = methods(harness)[0]
        XCTAssertEqual(sent.name, "login")
        XCTAssertEqual(
            sent.params,
            [
                [
                    "user": ["email": "ada@example.com"],
                    "password": ["digest": .string(MeteorPassword.digest("correct")), "algorithm": "sha-256"]
                ]
            ])
        XCTAssertFalse(
            harness.transport.sentFrames.joined().contains("\"correct\""), "the plaintext never leaves the process")
        harness.receive(.updated(methodIDs: ["1"]))
        harness.receive(.result(id: "1", result: loginResult, error: nil))
        let account = try await value(of: login)
        XCTAssertEqual(account.userID, "lovelace")
        XCTAssertEqual(harness.client.account?.token, "tok1")
        XCTAssertFalse(harness.client.loggingIn)
    }

    func testLoginWithoutExpiryDateWorks() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let login = Task { try await harness.client.login(username: "ada", password: "correct") }
        await waitForMethods(harness, count: 1)
        harness.receive(.result(id: "1", result: ["id": "lovelace", "token": "t"], error: nil))
        harness.receive(.updated(methodIDs: ["1"]))
        let account = try await value(of: login)
        XCTAssertNil(account.tokenExpires)
    }

    func testWrongPasswordSurfacesMeteors403AndLeavesTheAccountUnset() async {
        let harness = ClientHarness()
        harness.establishConnection()
        let login = Task { try await harness.client.login(email: "ada@example.com", password: "wrong") }
        await waitForMethods(harness, count: 1)
        harness.receive(
            .result(id: "1", result: nil, error: MeteorError(error: .number(403), reason: "Incorrect password")))
        harness.receive(.updated(methodIDs: ["1"]))
        do {
            _ = try await value(of: login)
            XCTFail("must throw")
        } catch let error as MeteorError {
            XCTAssertEqual(error.error, 403)
        } catch {
            XCTFail("unexpected \(error)")
        }
        XCTAssertNil(harness.client.account)
        XCTAssertFalse(harness.client.loggingIn)
    }

    func testLoginResultWithoutTokenIsATypedErrorAndLoggedOut() async {
        let harness = ClientHarness()
        harness.establishConnection()
        let login = Task { try await harness.client.login(email: "a@b.c", password: "p") }
        await waitForMethods(harness, count: 1)
        harness.receive(.result(id: "1", result: ["id": "x"], error: nil))
        harness.receive(.updated(methodIDs: ["1"]))
        do {
            _ = try await value(of: login)
            XCTFail("must throw")
        } catch {
            XCTAssertEqual((error as? AccountError)?.kind, .malformedLoginResult)
        }
        XCTAssertNil(harness.client.account)
    }

    func testLoggingInIsABarrierForOtherMethods() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        _ = try harness.client.call("before") { _ in }
        let login = Task { try await harness.client.login(email: "a@b.c", password: "p") }
        await waitForMethods(harness, count: 1)
        harness.settle()
        XCTAssertEqual(methods(harness).map(\.name), ["before"], "login waits for the earlier call")
        harness.receive(.result(id: "1", result: nil, error: nil))
        harness.receive(.updated(methodIDs: ["1"]))
        await waitForMethods(harness, count: 2)
        _ = try harness.client.call("after") { _ in }
        harness.settle()
        XCTAssertEqual(methods(harness).map(\.name), ["before", "login"], "the later call waits for login")
        harness.receive(.result(id: "2", result: loginResult, error: nil))
        harness.receive(.updated(methodIDs: ["2"]))
        _ = try await value(of: login)
        await waitForMethods(harness, count: 3)
        XCTAssertEqual(methods(harness).map(\.name), ["before", "login", "after"])
    }

    func testReconnectingWhenLoggedInSendsResumeFirstAndHoldsPendingCalls() async throws {
        let harness = try await loggedIn()
        _ = try harness.client.call("pending") { _ in }
        harness.settle()
        harness.dropAndReopen()
        XCTAssertEqual(methods(harness).map(\.name), ["login"])
        XCTAssertEqual(methods(harness).first?.params, [["resume": "tok1"]])
        harness.receive(.connected(session: "S2"))
        let resumed = expectation(forNotification: .ddpClientAccountDidChange, object: harness.client) { _ in
            harness.client.account?.token == "tok2"
        }
        harness.receive(.result(id: "3", result: ["id": "lovelace", "token": "tok2"], error: nil))
        harness.receive(.updated(methodIDs: ["3"]))
        await waitForMethods(harness, count: 2)
        XCTAssertEqual(methods(harness).map(\.name), ["login", "pending"])
        await fulfillment(of: [resumed], timeout: 5)
    }

    func testResumeFailureLogsOut() async throws {
        let store = InMemoryAccountStore()
        let harness = try await loggedIn(store)
        XCTAssertEqual(try store.load()?.userID, "lovelace")
        harness.transport.fail()
        harness.settle()
        harness.advance(by: .milliseconds(10))
        harness.transport.open()
        harness.receive(.connected(session: "S2"))
        let loggedOut = expectation(forNotification: .ddpClientAccountDidChange, object: harness.client) {
            notification in
            notification.userInfo?[DDPClient.accountUserInfoKey] != nil && harness.client.account == nil
        }
        harness.receive(
            .result(
                id: "2", result: nil,
                error: MeteorError(
                    error: .number(403), reason: "You've been logged out by the server. Please log in again.")))
        harness.receive(.updated(methodIDs: ["2"]))
        await fulfillment(of: [loggedOut], timeout: 5)
        XCTAssertNil(harness.client.account)
        XCTAssertNil(try store.load())
    }

    func testNotLoggedInMeansNoResumeOnReconnect() {
        let harness = ClientHarness()
        harness.establishConnection()
        harness.dropAndReopen()
        XCTAssertEqual(methods(harness).count, 0)
    }

    func testResultWithoutUpdatedBeforeADropResumesWithThatTokenAndCompletesOnce() async throws {
        let harness = ClientHarness()
        harness.establishConnection()
        let completions = CountBox()
        let login = Task {
            let account = try await harness.client.login(email: "a@b.c", password: "p")
            completions.increment()
            return account
        }
        await waitForMethods(harness, count: 1)
        harness.receive(.result(id: "1", result: ["id": "turing", "token": "fromResult"], error: nil))
        XCTAssertNil(harness.client.account, "not logged in before the data is visible")
        harness.dropAndReopen()
        XCTAssertEqual(methods(harness).first?.params, [["resume": "fromResult"]])
        harness.receive(.connected(session: "S2"))
        harness.receive(.result(id: "2", result: ["id": "turing", "token": "resumed"], error: nil))
        harness.receive(.updated(methodIDs: ["2"]))
        let account = try await value(of: login)
        XCTAssertEqual(account.userID, "turing")
        XCTAssertEqual(completions.value, 1)
    }

    func testLoggingOutClearsTheAccountAndTheStore() async throws {
        let store = InMemoryAccountStore()
        let harness = try await loggedIn(store)
        let logout = Task { try await harness.client.logout() }
        await waitForMethods(harness, count: 2)
        XCTAssertEqual(methods(harness).last?.name, "logout")
        harness.receive(.result(id: "2", result: nil, error: nil))
        harness.receive(.updated(methodIDs: ["2"]))
        try await value(of: logout)
        harness.settle()
        XCTAssertNil(harness.client.account)
        XCTAssertNil(try store.load())
    }

    /// Meteor's start-up auto-login: the stored account is presented at once, `loggingIn` is true until the resume
    /// completes (unlike a reconnect's resume, which leaves it alone).
    func testARestartedClientResumesFromTheStoredTokenLoggingInUntilItCompletes() async throws {
        let store = InMemoryAccountStore(Account(userID: "lovelace", token: "stored", tokenExpires: nil))
        let harness = ClientHarness { $0.accountStore = store }
        XCTAssertEqual(harness.client.account?.userID, "lovelace")
        XCTAssertTrue(harness.client.loggingIn, "logging in from start-up until the resume completes")
        harness.establishConnection()
        XCTAssertEqual(methods(harness).first?.name, "login")
        XCTAssertEqual(methods(harness).first?.params, [["resume": "stored"]])
        XCTAssertTrue(harness.client.loggingIn)
        let resumed = expectation(forNotification: .ddpClientAccountDidChange, object: harness.client) { _ in
            harness.client.account?.token == "tok1"
        }
        harness.receive(.result(id: "1", result: loginResult, error: nil))
        harness.receive(.updated(methodIDs: ["1"]))
        await fulfillment(of: [resumed], timeout: 5)
        // The account is set (and its notification posted, on the callback queue) before the login ends on the
        // client queue, as Meteor's makeClientLoggedIn sets the user before the login's callbacks: what the client
        // queue was doing when the notification came is done first.
        harness.settle()
        XCTAssertFalse(harness.client.loggingIn)
        // A reconnect's resume does not show as logging in (Meteor's `_suppressLoggingIn`).
        harness.dropAndReopen()
        XCTAssertEqual(methods(harness).last?.params, [["resume": "tok1"]])
        XCTAssertFalse(harness.client.loggingIn)
    }

    /// Closing the client is not a logout: a resume it cuts short keeps the stored account, and a closed client is not
    /// logging in (even if its resume was never sent).
    func testClosingTheClientDuringTheStartupResumeKeepsTheStoredAccount() throws {
        let store = InMemoryAccountStore(Account(userID: "lovelace", token: "stored", tokenExpires: nil))
        let harness = ClientHarness { $0.accountStore = store }
        harness.establishConnection()
        XCTAssertEqual(methods(harness).first?.params, [["resume": "stored"]])
        harness.client.close()
        harness.settle()
        harness.client.callbackQueue.sync {} // the resume's failure (clientClosed) goes back to the client queue
        harness.settle()
        XCTAssertEqual(try store.load()?.token, "stored")
        XCTAssertEqual(harness.client.account?.userID, "lovelace")
        XCTAssertFalse(harness.client.loggingIn)

        let neverConnected = ClientHarness {
            $0.accountStore = InMemoryAccountStore(Account(userID: "lovelace", token: "stored", tokenExpires: nil))
        }
        XCTAssertTrue(neverConnected.client.loggingIn)
        neverConnected.client.close()
        neverConnected.settle()
        XCTAssertFalse(neverConnected.client.loggingIn)
    }

    func testATokenThatExpiresSoonLogsOutInsteadOfResuming() throws {
        let soon = Date(timeIntervalSince1970: 1_700_000_000 + 60)
        let store = InMemoryAccountStore(Account(userID: "lovelace", token: "stored", tokenExpires: soon))
        let harness = ClientHarness { $0.accountStore = store }
        harness.establishConnection()
        XCTAssertEqual(methods(harness).count, 0)
        XCTAssertNil(harness.client.account)
        XCTAssertFalse(harness.client.loggingIn)
    }

    func testAccountDescriptionNeverShowsTheToken() {
        XCTAssertFalse(String(describing: Account(userID: "u", token: "secret-token")).contains("secret-token"))
    }
}
