import EJSON

// MARK: - OAuth from a native app (Meteor's accounts-oauth client)

extension MeteorError {
    /// Meteor's `Accounts.LoginCancelledError` code (`0x8acdc2f`): the server has no login attempt for the OAuth
    /// credential (the user closed the provider's page, or the credential was used or expired).
    public static let loginCancelledCode: Code = .number(Double(0x8acdc2f))

    /// Whether an OAuth login found no matching login attempt (Meteor's `LoginCancelledError`).
    public var isLoginCancelled: Bool { error == Self.loginCancelledCode }
}

extension DDPClient {
    /// Logs in with the credential an OAuth flow left on the server (Meteor's
    /// `Accounts.oauth.tryLoginAfterPopupClosed`): the login is stored and resumed on every reconnect, as any login.
    ///
    /// The flow, as a native app runs it: the app makes a random credential token, opens the provider's login page
    /// through the Meteor server's OAuth endpoints in a browser session (`ASWebAuthenticationSession` on Apple
    /// platforms; Meteor's `loginStyle: "redirect"` with a redirect URL of the app's scheme), the user signs in, and
    /// the server redirects to the app with the credential token and its secret. Then:
    /// ```swift
    /// try await client.login(oauthCredentialToken: credentialToken, credentialSecret: credentialSecret)
    /// ```
    /// - Throws: the server's ``MeteorError`` (``MeteorError/isLoginCancelled`` when no login attempt matches: the
    ///   user closed the page, or the credential was used already), ``MethodError`` for a local failure.
    @discardableResult
    public func login(oauthCredentialToken credentialToken: String, credentialSecret: String) async throws -> Account {
        try await login(params: [
            "oauth": ["credentialToken": .string(credentialToken), "credentialSecret": .string(credentialSecret)]
        ])
    }
}
