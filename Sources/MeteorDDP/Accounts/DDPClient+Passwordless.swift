import EJSON

// MARK: - Passwordless login (Meteor's accounts-passwordless client)

extension DDPClient {
    /// Asks the server to e-mail a one-time login code to the user (Meteor's `Accounts.requestLoginTokenForUser`);
    /// the user then logs in with ``login(selector:token:code:)``. A server that allows it creates the user first from
    /// `userData`.
    ///
    /// For example:
    /// ```swift
    /// try await client.requestLoginToken(for: "ada@example.com")
    /// // … the user reads the code in the e-mail …
    /// try await client.login(selector: "ada@example.com", token: "4A7C1F")
    /// ```
    /// - Parameters:
    ///   - selector: The user (an e-mail address is where the code goes).
    ///   - userData: The new user's fields (`email`, `username`, `profile`) when there is no such user yet.
    ///   - userCreationDisabled: Refuse ("User not found") rather than create a missing user.
    /// - Returns: Whether the server created the user.
    /// - Throws: ``MeteorError`` 400 "Must pass selector" for an empty selector (nothing is sent, as Meteor's client
    ///   refuses it), the server's ``MeteorError`` (403 "User not found"), ``MethodError`` for a local failure.
    @discardableResult
    public func requestLoginToken(
        for selector: AccountSelector, userData: EJSONObject? = nil, userCreationDisabled: Bool = false
    ) async throws -> Bool {
        guard !selector.isEmpty else { throw MeteorError(error: 400, reason: "Must pass selector") }
        var request: EJSONObject = ["selector": selector.ejsonValue]
        if let userData { request["userData"] = .object(userData) }
        if userCreationDisabled { request["options"] = ["userCreationDisabled": true] }
        let result = try await call("requestLoginTokenForUser", params: [.object(request)])
        return result?["isNewUser"] == true
    }

    /// Logs in with the one-time code of a login-token e-mail (Meteor's `Meteor.passwordlessLoginWithToken`); the
    /// login is stored and resumed on every reconnect, as any login. A code logs in once and expires (an hour on a
    /// default Meteor server); it also verifies the e-mail address it was sent to.
    ///
    /// - Parameters:
    ///   - selector: The user.
    ///   - token: The code from the e-mail.
    ///   - code: The authenticator app's code, for a user with 2FA on (`Meteor.passwordlessLoginWithTokenAnd2faCode`).
    /// - Throws: the server's ``MeteorError`` (403 "Expired token", "Email or token mismatch", "User has no token
    ///   set", `no-2fa-code`), ``MethodError`` for a local failure.
    @discardableResult
    public func login(selector: AccountSelector, token: String, code: String? = nil) async throws -> Account {
        var options: EJSONObject = ["selector": selector.ejsonValue, "token": .string(token)]
        if let code { options["code"] = .string(code) }
        return try await login(method: "login", arguments: [.object(options)])
    }
}
