import EJSON

// MARK: - Two-factor authentication (Meteor's accounts-2fa client)

/// What ``DDPClient/generate2faActivationQRCode(appName:)`` returns: the QR code an authenticator app scans, and
/// the secret and `otpauth://` URI it holds (for a user who types the secret in instead).
public struct TwoFactorActivation: Sendable, Equatable {
    /// The QR code as SVG.
    public let svg: String
    /// The TOTP secret (base32).
    public let secret: String
    /// The `otpauth://totp/…` URI.
    public let uri: String
}

extension MeteorError {
    /// Whether a login was refused because the user has 2FA on and no code was given (accounts-2fa's
    /// `no-2fa-code`): ask for the code and log in again with it.
    public var isTwoFactorCodeRequired: Bool { error == "no-2fa-code" }
    /// Whether the 2FA code given was wrong (`invalid-2fa-code`).
    public var isTwoFactorCodeInvalid: Bool { error == "invalid-2fa-code" }
}

extension DDPClient {
    /// Logs in with an e-mail address, a password and the code of the user's authenticator app (accounts-2fa's
    /// `Meteor.loginWithPasswordAnd2faCode`).
    ///
    /// For example:
    /// ```swift
    /// do {
    ///     try await client.login(email: "ada@example.com", password: "correct horse")
    /// } catch let error as MeteorError where error.isTwoFactorCodeRequired {
    ///     try await client.login(email: "ada@example.com", password: "correct horse", code: askForCode())
    /// }
    /// ```
    /// - Throws: ``MeteorError`` 400 for an empty code (nothing is sent, as Meteor's
    ///   `loginWithPasswordAnd2faCode` refuses it), the server's ``MeteorError`` (`invalid-2fa-code`, 403 "Incorrect
    ///   password"), ``MethodError`` for a local failure, ``AccountError``.
    @discardableResult
    public func login(email: String, password: String, code: String) async throws -> Account {
        try Self.checkTwoFactorCode(code)
        return try await login(params: [
            "user": ["email": .string(email)], "password": Self.hashedPassword(password), "code": .string(code)
        ])
    }

    /// Logs in with a username, a password and a 2FA code.
    @discardableResult
    public func login(username: String, password: String, code: String) async throws -> Account {
        try Self.checkTwoFactorCode(code)
        return try await login(params: [
            "user": ["username": .string(username)], "password": Self.hashedPassword(password), "code": .string(code)
        ])
    }

    /// Meteor's `loginWithPasswordAnd2faCode` throws before sending for a missing code.
    private static func checkTwoFactorCode(_ code: String) throws {
        guard !code.isEmpty else {
            throw MeteorError(
                error: 400, reason: "token is required to use loginWithPasswordAnd2faCode and must be a string")
        }
    }

    /// Whether the logged-in user has 2FA on (`Accounts.has2faEnabled`).
    /// - Throws: the server's ``MeteorError`` (`no-logged-user`), ``MethodError`` for a local failure.
    public func has2faEnabled() async throws -> Bool {
        try await call("has2faEnabled") == true
    }

    /// Starts turning 2FA on: the server makes a secret for the logged-in user and returns its QR code
    /// (`Accounts.generate2faActivationQrCode`). 2FA is on once ``enable2fa(code:)`` confirms a code from it.
    /// - Throws: the server's ``MeteorError`` (`2fa-activated` when it is on already), ``MethodError`` for a local
    ///   failure, `DecodingError` for an answer without the QR code.
    public func generate2faActivationQRCode(appName: String) async throws -> TwoFactorActivation {
        let result = try await call("generate2faActivationQrCode", params: [.string(appName)], options: .credentials())
        guard let svg = result?["svg"]?.stringValue, let secret = result?["secret"]?.stringValue,
            let uri = result?["uri"]?.stringValue
        else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: [], debugDescription: "generate2faActivationQrCode answered without svg, secret and uri"
                ))
        }
        return TwoFactorActivation(svg: svg, secret: secret, uri: uri)
    }

    /// Turns 2FA on with a code from the authenticator app that scanned the activation QR code
    /// (`Accounts.enableUser2fa`).
    /// - Throws: ``MeteorError`` 400 for an empty code (nothing is sent), the server's ``MeteorError``
    ///   (`invalid-2fa-code`), ``MethodError`` for a local failure.
    public func enable2fa(code: String) async throws {
        guard !code.isEmpty else { throw MeteorError(error: 400, reason: "Must provide a code to validate") }
        _ = try await call("enableUser2fa", params: [.string(code)], options: .credentials())
    }

    /// Turns 2FA off for the logged-in user (`Accounts.disableUser2fa`).
    public func disable2fa() async throws {
        _ = try await call("disableUser2fa")
    }
}
