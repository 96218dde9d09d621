import Foundation

/// Something that happened to the client's login: what Meteor's `Accounts.onLogin`, `onLoginFailure` and `onLogout`
/// report to a web app, in the order it happened. ``DDPClient/loginEvents`` delivers them.
///
/// For example, a screen that sends the user back to the login form and says why:
/// ```swift
/// for await event in client.loginEvents {
///     switch event {
///     case .loggedIn(let account, let type):
///         print("logged in as \(account.userID) (\(type))")
///     case .loginFailed(let error, _):
///         print("login failed: \(error)")
///     case .loggedOut(_, .tokenRevoked):
///         print("You were logged out on another device. Please log in again.")
///     case .loggedOut(_, .tokenExpired):
///         print("Your session has expired. Please log in again.")
///     case .loggedOut:
///         print("logged out")
///     }
/// }
/// ```
public enum LoginEvent: Sendable, CustomStringConvertible {
    /// A login completed: by a login method the app called, or by the resume of the stored login at start-up or
    /// after a reconnect (Meteor's `onLogin`, which also runs at every reconnect's resume). The user's data is in the
    /// cache by then. `type` is how the server logged the user in.
    case loggedIn(Account, type: LoginType)
    /// A login failed (Meteor's `onLoginFailure`): the app's login method (`isResume` false), or a resume of the stored
    /// login (`isResume` true; when the server refused it, a ``loggedOut(userID:reason:)`` follows).
    case loginFailed(any Error, isResume: Bool)
    /// The client was logged in as `userID` and is not any more (Meteor's `onLogout`); `reason` says why.
    case loggedOut(userID: String, reason: LogoutReason)

    public var description: String {
        switch self {
        case .loggedIn(let account, let type): "loggedIn(\(account.userID), type: \(type))"
        case .loginFailed(let error, let isResume): "loginFailed(\(error), isResume: \(isResume))"
        case .loggedOut(let userID, let reason): "loggedOut(\(userID), reason: \(reason))"
        }
    }
}

/// How the server logged a user in: the `type` of Meteor's login result (`password`, `resume`, `passwordless`, an
/// OAuth service's name such as `github`, or a custom login handler's name). `unknown` when the server did not say.
public struct LoginType: RawRepresentable, Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
    public var rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }

    /// A password (a login, `createUser`, `resetPassword`, `verifyEmail`; with or without a 2FA code).
    public static let password: LoginType = "password"
    /// A resume token: the stored login at start-up, after a reconnect, or ``DDPClient/login(resumeToken:)``.
    public static let resume: LoginType = "resume"
    /// A code or link from ``DDPClient/requestLoginToken(for:userData:userCreationDisabled:)``.
    public static let passwordless: LoginType = "passwordless"
    /// The server's result said nothing (Meteor's server default).
    public static let unknown: LoginType = "unknown"

    public var description: String { rawValue }
}

/// Why a client that was logged in is not any more.
public enum LogoutReason: Sendable, CustomStringConvertible {
    /// The app called ``DDPClient/logout()``.
    case app
    /// The login token expired. `nil`: the client found it expired, or expiring within Meteor's margin (a tenth of
    /// its lifetime, at most an hour), and never sent it: at start-up (the client starts logged out) or before a
    /// reconnect's resume. Otherwise the server's refusal by its own clock (403 "Your session has expired").
    case tokenExpired(MeteorError?)
    /// The server no longer knows the token (403 "You've been logged out by the server"): another client logged the
    /// user's other devices out (``DDPClient/logoutOtherClients()``), changed or reset the password, or logged out
    /// with the same token, or the server's code removed it. The server closes the connections using the token; their
    /// resume is refused. The protocol does not say which of these happened.
    case tokenRevoked(MeteorError)
    /// A resume failed for another reason (Meteor logs out on any failed resume: a rate limit, a login handler's
    /// error), or a login's result could not be used (no id or token).
    case loginFailed(any Error)

    /// Classifies a failed resume as Meteor's resume handler words its refusals (accounts-base's `resume` login
    /// handler).
    init(resumeError error: any Error) {
        guard let meteorError = error as? MeteorError, meteorError.error == 403 else {
            self = .loginFailed(error)
            return
        }
        switch meteorError.reason {
        case "Your session has expired. Please log in again.": self = .tokenExpired(meteorError)
        case "You've been logged out by the server. Please log in again.": self = .tokenRevoked(meteorError)
        default: self = .loginFailed(error)
        }
    }

    public var description: String {
        switch self {
        case .app: "app"
        case .tokenExpired(nil): "tokenExpired"
        case .tokenExpired(let error?): "tokenExpired(\(error))"
        case .tokenRevoked(let error): "tokenRevoked(\(error))"
        case .loginFailed(let error): "loginFailed(\(error))"
        }
    }
}
