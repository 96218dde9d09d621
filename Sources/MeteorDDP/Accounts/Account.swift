import EJSON
import Foundation

/// The logged-in user as the server's `login` result describes it.
///
/// The token is a secret: it is never logged, and ``description`` hides it.
public struct Account: Sendable, Equatable, Codable, CustomStringConvertible {
    /// The user's id.
    public var userID: String
    /// The resume token that logs this user in again after a reconnect or a restart.
    public var token: String
    /// When the token expires, if the server said.
    public var tokenExpires: Date?

    /// Creates an account.
    public init(userID: String, token: String, tokenExpires: Date? = nil) {
        self.userID = userID
        self.token = token
        self.tokenExpires = tokenExpires
    }

    /// Reads a `login` result: `{id, token, tokenExpires?}`.
    /// - Throws: ``AccountError`` of kind ``AccountError/Kind/malformedLoginResult`` when `id` or `token` is missing.
    init(loginResult result: EJSONValue?) throws {
        guard let id = result?["id"]?.stringValue, let token = result?["token"]?.stringValue, !id.isEmpty,
            !token.isEmpty
        else {
            throw AccountError(.malformedLoginResult, "the login result has no id or no token")
        }
        self.init(userID: id, token: token, tokenExpires: result?["tokenExpires"]?.dateValue)
    }

    /// Whether the token expires within Meteor's margin (10 % of its lifetime, at most an hour, before expiry;
    /// accounts_common.js `_tokenExpiresSoon`), measured against a 90-day lifetime.
    func expiresSoon(now: Date) -> Bool {
        guard let tokenExpires else { return false }
        let margin = min(0.1 * 90 * 24 * 3600, 3600.0)
        return now.addingTimeInterval(margin) >= tokenExpires
    }

    public var description: String {
        "Account(userID: \(userID), token: <redacted>, "
            + "tokenExpires: \(tokenExpires.map(String.init(describing:)) ?? "nil"))"
    }
}

/// A login that could not be completed or an account store that failed.
public struct AccountError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: String, Sendable, Hashable {
        /// The server accepted the login but its result has no id or token.
        case malformedLoginResult
        /// The stored account could not be read (corrupt file, wrong permissions).
        case unreadableStore
        /// The account could not be stored.
        case unwritableStore
        /// The server logged the user in, but did not publish the user's document to this client within
        /// ``DDPClient/Configuration/loginUserDocumentTimeout``; or the client logged out or another login took over
        /// before it came. The login throws this instead of returning.
        case userDocumentNotReceived
        /// The operation needs a logged-in user (``DDPClient/changePassword(old:new:)``,
        /// ``DDPClient/logoutOtherClients()``).
        case notLoggedIn
    }

    /// What went wrong.
    public let kind: Kind
    /// A human-readable explanation (never containing a secret).
    public let message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
