import EJSON
import Foundation

// MARK: - Passwords (Meteor's accounts-password client)

extension DDPClient {
    /// Changes the logged-in user's password (Meteor's `Accounts.changePassword`). Both passwords leave the process
    /// only as Meteor's SHA-256 digests. This connection stays logged in; the server drops the user's other login
    /// tokens, so other devices are logged out.
    ///
    /// For example:
    /// ```swift
    /// try await client.changePassword(old: "correct horse", new: "battery staple")
    /// ```
    /// - Parameters:
    ///   - old: The current password (`nil` sends none: Meteor's servers refuse that unless the app allows it).
    ///   - new: The new password (not empty).
    /// - Throws: ``AccountError`` of kind ``AccountError/Kind/notLoggedIn`` (nothing is sent), ``MeteorError`` 400
    ///   for an empty password (nothing is sent, as Meteor's client refuses it), the server's ``MeteorError`` (403
    ///   "Incorrect password"), ``MethodError`` for a local failure.
    public func changePassword(old: String?, new: String) async throws {
        guard account != nil else { throw AccountError(.notLoggedIn, "must be logged in to change the password") }
        guard !new.isEmpty else { throw MeteorError(error: 400, reason: "Password may not be empty") }
        // Not a wait method (Meteor's is not); never stored offline: its parameters are credentials.
        let result = try await call(
            "changePassword", params: [old.map(Self.hashedPassword) ?? .null, Self.hashedPassword(new)],
            options: .credentials())
        guard let result, result.isTruthy else {
            throw MeteorError(error: "no-result", reason: "No result from changePassword.")
        }
    }

    /// Asks the server to e-mail a link to reset the password of the user with this address (Meteor's
    /// `Accounts.forgotPassword`). The link carries a token for ``resetPassword(token:newPassword:)``.
    ///
    /// For example:
    /// ```swift
    /// try await client.forgotPassword(email: "ada@example.com")
    /// ```
    /// - Throws: ``MeteorError`` 400 "Must pass options.email" for an empty address (nothing is sent, as Meteor's
    ///   client refuses it), the server's ``MeteorError`` (403 "User not found", or Meteor 3's ambiguous "Something
    ///   went wrong"), ``MethodError`` for a local failure.
    public func forgotPassword(email: String) async throws {
        guard !email.isEmpty else { throw MeteorError(error: 400, reason: "Must pass options.email") }
        _ = try await call("forgotPassword", params: [["email": .string(email)]])
    }

    /// Sets a new password with the token of a reset or enrollment e-mail and logs in (Meteor's
    /// `Accounts.resetPassword`): the stored login is replaced and resumed on every reconnect; the server logs the
    /// user's other devices out.
    ///
    /// The token reaches the app in the e-mail's link (`https://app.example/#/reset-password/<token>`, or
    /// `…/enroll-account/<token>`): a universal link the app opens, or a code the user pastes.
    /// For example:
    /// ```swift
    /// func open(_ url: URL) async throws {
    ///     // https://app.example/#/reset-password/TOKEN
    ///     guard let fragment = url.fragment, fragment.hasPrefix("/reset-password/") else { return }
    ///     let token = String(fragment.dropFirst("/reset-password/".count))
    ///     try await client.resetPassword(token: token, newPassword: "battery staple")
    /// }
    /// ```
    /// - Throws: ``MeteorError`` 400 for an empty password (nothing is sent), the server's ``MeteorError`` (403
    ///   "Token expired" for an unknown, used or expired token), ``MethodError`` for a local failure.
    @discardableResult
    public func resetPassword(token: String, newPassword: String) async throws -> Account {
        guard !newPassword.isEmpty else { throw MeteorError(error: 400, reason: "Password may not be empty") }
        return try await login(method: "resetPassword", arguments: [.string(token), Self.hashedPassword(newPassword)])
    }

    /// Marks an e-mail address verified with the token of a verification e-mail and logs in (Meteor's
    /// `Accounts.verifyEmail`; the link is `https://app.example/#/verify-email/<token>`).
    ///
    /// - Throws: ``MeteorError`` 400 "Need to pass token" for an empty token (nothing is sent, as Meteor's client
    ///   refuses it), the server's ``MeteorError`` (403 "Verify email link expired"), ``MethodError`` for a local
    ///   failure.
    @discardableResult
    public func verifyEmail(token: String) async throws -> Account {
        guard !token.isEmpty else { throw MeteorError(error: 400, reason: "Need to pass token") }
        return try await login(method: "verifyEmail", arguments: [.string(token)])
    }

    /// Logs the user out everywhere else (Meteor's `Accounts.logoutOtherClients`): this client takes a new login
    /// token (`getNewToken`, stored and resumed from then on), then the server drops every other token of the user
    /// (`removeOtherTokens`) and closes the connections that used them; their resume fails and they log out.
    ///
    /// For example:
    /// ```swift
    /// try await client.logoutOtherClients()
    /// ```
    /// Both calls are wait methods queued back to back, as Meteor queues them: nothing runs between them.
    /// - Throws: ``AccountError`` of kind ``AccountError/Kind/notLoggedIn`` (nothing is sent), the server's
    ///   ``MeteorError``, ``MethodError`` for a local failure.
    public func logoutOtherClients() async throws {
        guard let current = account else {
            throw AccountError(.notLoggedIn, "must be logged in to log other clients out")
        }
        var newToken = MethodOptions.credentials(wait: true)
        // As the answer arrives (before `updated`): a reconnect from then on resumes with the new token.
        newToken.onResultReceivedOnClientQueue = { [weak self] result in
            guard let self, case .success(let value) = result, let account = try? Account(loginResult: value) else {
                return
            }
            guard account.userID == current.userID else { return }
            self.handle(.resumeTokenChanged(account.token))
            self.setAccount(account)
        }
        let removed = OneShot<EJSONValue?>()
        let tokenTaken = OneShot<EJSONValue?>()
        let options = MethodOptions.credentials(wait: true)
        try onClientQueue {
            // Queued together on the client queue: no other call can come between them.
            _ = try call("getNewToken", params: [], options: newToken, completesInline: true) { tokenTaken.fulfill($0) }
            _ = try call("removeOtherTokens", params: [], options: options, completesInline: true) {
                removed.fulfill($0)
            }
        }
        _ = try await tokenTaken.value
        _ = try await removed.value
    }
}
