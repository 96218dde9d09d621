import EJSON
import Foundation
import MeteorDDP

/// An e-mail the test server "sent" (captured in memory: a test reads the token a user would find in it).
public struct SentEmail: Sendable, Equatable {
    /// What the e-mail is for.
    public enum Kind: String, Sendable {
        /// `Accounts.sendResetPasswordEmail` (after `forgotPassword`): the link `#/reset-password/<token>`.
        case resetPassword = "reset-password"
        /// `Accounts.sendEnrollmentEmail`: the link `#/enroll-account/<token>`.
        case enrollAccount = "enroll-account"
        /// `Accounts.sendVerificationEmail`: the link `#/verify-email/<token>`.
        case verifyEmail = "verify-email"
        /// accounts-passwordless' `Accounts.sendLoginTokenEmail`: the one-time code (`?loginToken=<code>`).
        case loginToken = "login-token"
    }

    /// The address it went to.
    public let to: String
    /// What it is for.
    public let kind: Kind
    /// The token in its link.
    public let token: String
    /// Its link, as Meteor's default `Accounts.urls` make it.
    public let url: String
}

extension DDPTestServer {
    /// How long a reset token lasts (Meteor: 3 days) and an enrollment token (30 days).
    static let resetTokenLifetime: TimeInterval = 3 * 24 * 3600
    static let enrollTokenLifetime: TimeInterval = 30 * 24 * 3600

    /// The e-mails sent so far (reset, enrollment, verification), oldest first.
    public var sentEmails: [SentEmail] { perform { accounts.sentEmails } }

    /// Sends the user an enrollment e-mail (Meteor's `Accounts.sendEnrollmentEmail`); returns its token.
    @discardableResult
    public func sendEnrollmentEmail(userID: String, email: String? = nil) -> String? {
        perform { sendEmail(.enrollAccount, userID: userID, address: email) }
    }

    /// Sends the user a verification e-mail (Meteor's `Accounts.sendVerificationEmail`); returns its token.
    @discardableResult
    public func sendVerificationEmail(userID: String, email: String? = nil) -> String? {
        perform { sendEmail(.verifyEmail, userID: userID, address: email) }
    }

    /// Moves the e-mail tokens' creation back by `interval` (to test expired reset and enrollment links).
    public func ageEmailTokens(by interval: TimeInterval) {
        perform {
            accounts.emailTokens = accounts.emailTokens.mapValues {
                ServerAccounts.EmailToken(
                    userID: $0.userID, address: $0.address, when: $0.when.addingTimeInterval(-interval), kind: $0.kind)
            }
        }
    }

    /// Whether the user's address is verified.
    public func isEmailVerified(userID: String, email: String) -> Bool {
        perform {
            collection("users").document(userID)?["emails"]?.arrayValue?.contains {
                $0["address"]?.stringValue == email && $0["verified"] == true
            } ?? false
        }
    }

    /// Makes a token for the user's address (its first one by default), records the e-mail; `nil` without one.
    func sendEmail(_ kind: SentEmail.Kind, userID: String, address: String?) -> String? {
        let addresses = addresses(of: userID)
        guard let address = address ?? addresses.first, addresses.contains(address) else { return nil }
        if kind != .verifyEmail {
            // One reset or enrollment token per user, as Meteor keeps one in services.password.reset/enroll.
            accounts.emailTokens = accounts.emailTokens.filter { $0.value.userID != userID || $0.value.kind != kind }
        }
        let token = SecureRandomGenerator().secret()
        accounts.emailTokens[token] = ServerAccounts.EmailToken(
            userID: userID, address: address, when: Date(), kind: kind)
        accounts.sentEmails.append(
            SentEmail(to: address, kind: kind, token: token, url: "\(rootURL)/#/\(kind.rawValue)/\(token)"))
        return token
    }

    /// The `{digest, algorithm}` of a password parameter (Meteor's passwordValidator), or 400 "Match failed".
    private func digest(_ value: EJSONValue?) throws -> String {
        guard let digest = value?["digest"]?.stringValue, digest.count == 64, value?["algorithm"] == "sha-256" else {
            throw MeteorError(error: .number(400), reason: "Match failed")
        }
        return digest
    }

    private func setPassword(_ userID: String, digest: String) {
        let salt = SecureRandomGenerator().secret(16)
        accounts.passwords[userID] = ServerAccounts.Password(
            salt: salt, hash: ServerAccounts.hash(digest: digest, salt: salt))
    }

    func registerPasswordMethods() {
        // accounts-password's changePassword: the connection keeps its token, every other one of the user goes.
        methods["changePassword"] = { context in
            let old = try self.digest(context.params.first)
            let new = try self.digest(context.params.dropFirst().first)
            guard let userID = context.userID else {
                throw MeteorError(error: .number(401), reason: "Must be logged in")
            }
            guard let password = self.accounts.passwords[userID] else {
                throw MeteorError(error: .number(403), reason: "User has no password set")
            }
            guard ServerAccounts.hash(digest: old, salt: password.salt) == password.hash else {
                throw MeteorError(error: .number(403), reason: "Incorrect password")
            }
            self.setPassword(userID, digest: new)
            let current = context.session?.loginToken
            self.removeLoginTokens { $0.userID == userID && $1 != current }
            self.accounts.emailTokens = self.accounts.emailTokens.filter {
                $0.value.userID != userID || $0.value.kind != .resetPassword
            }
            return ["passwordChanged": true]
        }
        methods["forgotPassword"] = { context in
            guard case .object(let options)? = context.params.first, let email = options["email"]?.stringValue,
                options.count == 1
            else {
                throw MeteorError(error: .number(400), reason: "Match failed")
            }
            guard let userID = self.user(byEmail: email) else {
                throw MeteorError(error: .number(403), reason: "User not found")
            }
            _ = self.sendEmail(
                .resetPassword, userID: userID,
                address: self.addresses(of: userID).first { $0.lowercased() == email.lowercased() })
            return nil
        }
        // A reset or enrollment token sets the password, verifies the address, logs every session of the user out
        // and logs this one in.
        methods["resetPassword"] = { context in
            guard let token = context.params.first?.stringValue else {
                throw MeteorError(error: .number(400), reason: "Match failed")
            }
            let digest = try self.digest(context.params.dropFirst().first)
            guard let record = self.accounts.emailTokens[token], record.kind != .verifyEmail else {
                throw MeteorError(error: .number(403), reason: "Token expired")
            }
            let lifetime = record.kind == .enrollAccount ? Self.enrollTokenLifetime : Self.resetTokenLifetime
            guard Date() < record.when.addingTimeInterval(lifetime) else {
                throw MeteorError(error: .number(403), reason: "Token expired")
            }
            guard self.markEmailVerified(record.address, of: record.userID) else {
                throw MeteorError(error: .number(403), reason: "Token has invalid email address")
            }
            self.accounts.emailTokens.removeValue(forKey: token)
            self.setPassword(record.userID, digest: digest)
            self.removeLoginTokens { entry, _ in entry.userID == record.userID }
            return self.logIn(record.userID, context: context)
        }
        methods["verifyEmail"] = { context in
            guard let token = context.params.first?.stringValue else {
                throw MeteorError(error: .number(400), reason: "Match failed")
            }
            guard let record = self.accounts.emailTokens[token], record.kind == .verifyEmail else {
                throw MeteorError(error: .number(403), reason: "Verify email link expired")
            }
            guard self.markEmailVerified(record.address, of: record.userID) else {
                throw MeteorError(error: .number(403), reason: "Verify email link is for unknown address")
            }
            self.accounts.emailTokens = self.accounts.emailTokens.filter {
                !($0.value.kind == .verifyEmail && $0.value.userID == record.userID
                    && $0.value.address == record.address)
            }
            return self.logIn(record.userID, context: context)
        }
    }

    /// Sets `verified` on the user's address; `false` when the user no longer has it.
    func markEmailVerified(_ address: String, of userID: String) -> Bool {
        let users = collection("users")
        guard case .array(var emails)? = users.document(userID)?["emails"],
            let index = emails.firstIndex(where: { $0["address"]?.stringValue == address }),
            case .object(var entry) = emails[index]
        else { return false }
        entry["verified"] = true
        emails[index] = .object(entry)
        _ = try? users.update(userID, ["$set": ["emails": .array(emails)]])
        return true
    }

    func registerTokenMethods() {
        // accounts-base's getNewToken: a new token for this connection, expiring when the current one does.
        methods["getNewToken"] = { context in
            guard let userID = context.userID, let current = context.session?.loginToken,
                let entry = self.accounts.tokens[current]
            else {
                throw MeteorError(error: .string("You are not logged in."))
            }
            let token = SecureRandomGenerator().secret()
            self.accounts.tokens[token] = ServerAccounts.Token(userID: userID, expires: entry.expires)
            context.session?.loginToken = token
            return ["id": .string(userID), "token": .string(token), "tokenExpires": .date(entry.expires)]
        }
        // accounts-base's removeOtherTokens: every token of the user but this connection's.
        methods["removeOtherTokens"] = { context in
            guard let userID = context.userID else { throw MeteorError(error: .string("You are not logged in.")) }
            let current = context.session?.loginToken
            self.removeLoginTokens { $0.userID == userID && $1 != current }
            return nil
        }
    }

    /// Removes the login tokens `shouldRemove` picks and closes the connections logged in with them, as Meteor's
    /// server does (its observe of the connection's token closes the connection when the token goes): their clients
    /// reconnect, and their resume is refused.
    func removeLoginTokens(where shouldRemove: (ServerAccounts.Token, String) -> Bool) {
        let removed = Set(accounts.tokens.filter { shouldRemove($0.value, $0.key) }.keys)
        guard !removed.isEmpty else { return }
        for token in removed { accounts.tokens.removeValue(forKey: token) }
        for session in Array(liveSessions.values) {
            guard let token = session.loginToken, removed.contains(token) else { continue }
            session.loginToken = nil
            session.close()
        }
    }
}
