import EJSON
import Foundation
import XCTest

@testable import MeteorDDP

/// The login lifecycle as event scripts for ``ClientCore``: one owner for the account, the logins in progress, the
/// logout reason and the resume token, changed only through the funnel (issue 48).
final class ClientCoreLoginTests: XCTestCase {
    private let ada = Account(userID: "ada", token: "tok-ada")
    private let grace = Account(userID: "grace", token: "tok-grace")

    /// Accounts-base's auto-login at start-up: the stored account is presented at once, `loggingIn` until its resume
    /// completes, and the first socket resumes it.
    func testAStoredAccountIsPresentedAndResumedAndLoggingInUntilTheResumeEnds() {
        var core = ClientCore.scripted()
        XCTAssertEqual(ClientCore.describe(core.handle(.storedAccountRestored(ada))), [])
        XCTAssertEqual(core.login.published.account, ada)
        XCTAssertTrue(core.login.published.loggingIn)
        XCTAssertEqual(core.socketReset().resumeToken, "tok-ada")
        _ = core.handle(.loginEnded(resuming: true))
        XCTAssertFalse(core.login.published.loggingIn, "the start-up resume ended")
        _ = core.handle(.loginEnded(resuming: true))
        XCTAssertFalse(core.login.published.loggingIn, "a reconnect's resume never counts")
    }

    func testAnExpiredStoredAccountStartsLoggedOutWithItsReason() {
        var core = ClientCore.scripted()
        _ = core.handle(.storedAccountExpired)
        XCTAssertNil(core.login.published.account)
        guard case .tokenExpired = core.login.published.logoutReason else { return XCTFail("the reason is given") }
        XCTAssertNil(core.socketReset().resumeToken, "nothing to resume")
    }

    /// Overlapping logins count down one by one; the account is published (and acted on) only when it changes, and a
    /// successful login clears the logout reason.
    func testLoginsCountAndTheAccountChangesOnlyWhenItDiffers() {
        var core = ClientCore.scripted()
        _ = core.handle(.loginStarted)
        _ = core.handle(.loginStarted)
        XCTAssertTrue(core.login.published.loggingIn)
        _ = core.handle(.resumeTokenChanged("tok-ada"))
        XCTAssertEqual(
            ClientCore.describe(core.handle(.accountSet(ada, clearingLogoutReason: true))), ["accountChanged(ada)"])
        XCTAssertEqual(ClientCore.describe(core.handle(.accountSet(ada, clearingLogoutReason: true))), [], "unchanged")
        _ = core.handle(.loginEnded(resuming: false))
        XCTAssertTrue(core.login.published.loggingIn, "one login still goes on")
        _ = core.handle(.loginEnded(resuming: false))
        XCTAssertFalse(core.login.published.loggingIn)
        _ = core.handle(.loginEnded(resuming: false))
        XCTAssertEqual(core.login.loginsInProgress, 0, "never below zero")
        XCTAssertEqual(core.socketReset().resumeToken, "tok-ada")
    }

    /// Meteor's `makeClientLoggedOut`: the resume stops, the account goes with its reason, once.
    func testALogoutClearsTheAccountAndTheResumeOnce() {
        var core = ClientCore.scripted()
        _ = core.handle(.resumeTokenChanged("tok-grace"))
        _ = core.handle(.accountSet(grace, clearingLogoutReason: true))
        XCTAssertEqual(
            ClientCore.describe(core.handle(.logoutRequired(.app))), ["accountChanged(nil)", "loggedOut(grace)"])
        XCTAssertNil(core.login.published.account)
        guard case .app = core.login.published.logoutReason else { return XCTFail("the reason is kept") }
        XCTAssertNil(core.socketReset().resumeToken, "no resume from now on")
        XCTAssertEqual(ClientCore.describe(core.handle(.logoutRequired(.app))), [], "logged out once")
        _ = core.handle(.accountSet(ada, clearingLogoutReason: true))
        XCTAssertNil(core.login.published.logoutReason, "a login clears the reason")
    }

    func testClosingEndsEveryLoginInProgress() {
        var core = ClientCore.scripted()
        _ = core.handle(.storedAccountRestored(ada))
        _ = core.handle(.loginStarted)
        _ = core.handle(.closeRequested)
        XCTAssertFalse(core.login.published.loggingIn)
        XCTAssertEqual(core.login.published.account, ada, "closing keeps the account (stored for the next start)")
        _ = core.handle(.closedAccountForgotten)
        XCTAssertNil(core.login.published.account)
    }

    /// Every change other threads can see bumps the version the client publishes by.
    func testEveryPublishedChangeBumpsTheVersion() {
        var core = ClientCore.scripted()
        var last = core.login.version
        func bumped(_ input: ClientCore.Input) -> Bool {
            _ = core.handle(input)
            defer { last = core.login.version }
            return core.login.version != last
        }
        XCTAssertTrue(bumped(.loginStarted))
        XCTAssertTrue(bumped(.accountSet(ada, clearingLogoutReason: false)))
        XCTAssertFalse(bumped(.accountSet(ada, clearingLogoutReason: false)), "nothing changed")
        XCTAssertFalse(bumped(.resumeTokenChanged("t")), "the token is the core's alone")
        XCTAssertTrue(bumped(.loginEnded(resuming: false)))
        XCTAssertTrue(bumped(.logoutRequired(.app)))
    }
}
