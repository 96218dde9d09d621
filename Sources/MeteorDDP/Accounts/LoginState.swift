/// The login lifecycle, owned by the core (``ClientCore/login``) and changed only through its funnel: the account,
/// the logins in progress, why the client is logged out, and the token a new socket resumes (accounts-base's
/// `_userId`, `_loggingIn`, `_lastLoginTokenWhenPolled` and the connection's `_userId`, in one place).
///
/// Other threads read the ``published`` part (``DDPClient/account``, ``DDPClient/loggingIn``,
/// ``DDPClient/logoutReason``): the client copies it into a lock box after every decision that changed it, so a reader
/// sees a whole login state, never half of a change.
struct LoginState {
    /// What other threads read.
    struct Published: Sendable {
        var account: Account?
        var loggingIn = false
        var logoutReason: LogoutReason?
    }

    /// The account the app sees (set once its login's result arrived; cleared by a logout).
    private(set) var account: Account?
    /// Logins the app called that have not completed (their user's document included): they may overlap, since a
    /// login's method is answered before its user arrives.
    private(set) var loginsInProgress = 0
    /// Whether the resume of the account restored at start-up has not completed (Meteor's `loggingIn()` covers it; a
    /// reconnect's resume does not count).
    private(set) var startupResumeInProgress = false
    /// Why the client is logged out (``DDPClient/logoutReason``).
    private(set) var logoutReason: LogoutReason?
    /// The token a new socket resumes with: the newest login result's (as it arrives, before `updated`), the stored
    /// account's at start-up; `nil` once logged out.
    private(set) var resumeToken: String?
    /// Bumped by every change of the published part, so the client copies it only when it changed.
    private(set) var version = 0

    /// Meteor's `loggingIn()`.
    var loggingIn: Bool { loginsInProgress > 0 || startupResumeInProgress }

    var published: Published {
        Published(account: account, loggingIn: loggingIn, logoutReason: logoutReason)
    }

    /// An account restored from the ``DDPClient/Configuration/accountStore`` at start-up: presented now, resumed first
    /// on the first connection, and ``loggingIn`` until that resume completes (Meteor's auto-login at start-up).
    mutating func restored(_ stored: Account) {
        account = stored
        startupResumeInProgress = true
        resumeToken = stored.token
        version += 1
    }

    /// The stored account's token had expired or expires within the hour at start-up: never sent.
    mutating func restoredAccountExpired() {
        logoutReason = .tokenExpired(nil)
        version += 1
    }

    /// The app called a login method.
    mutating func loginStarted() {
        loginsInProgress += 1
        version += 1
    }

    /// A login ended (completed or failed): the app's counts down; the first resume ends the start-up one.
    mutating func loginEnded(resuming: Bool) {
        if resuming {
            startupResumeInProgress = false
        } else {
            loginsInProgress = max(0, loginsInProgress - 1)
        }
        version += 1
    }

    mutating func resumeTokenChanged(_ token: String?) {
        resumeToken = token
    }

    /// Sets the account; a successful login also clears ``logoutReason``. Returns whether the account changed.
    mutating func setAccount(_ new: Account?, clearingLogoutReason: Bool) -> Bool {
        let changed = account != new
        account = new
        if clearingLogoutReason { logoutReason = nil }
        if changed || clearingLogoutReason { version += 1 }
        return changed
    }

    /// Meteor's `makeClientLoggedOut`: no resume from now on, and why. Returns whether there was an account to leave
    /// (its user id): a client is logged out once.
    mutating func loggedOut(_ reason: LogoutReason) -> String? {
        resumeToken = nil
        guard let userID = account?.userID else { return nil }
        logoutReason = reason
        version += 1
        return userID
    }

    /// `close()`: no login goes on.
    mutating func closed() {
        loginsInProgress = 0
        startupResumeInProgress = false
        version += 1
    }
}
