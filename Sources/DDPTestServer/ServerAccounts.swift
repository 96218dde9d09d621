import EJSON
import Foundation
import MeteorDDP

/// The test server's accounts (Meteor's accounts-base / accounts-password server side): users in the `users`
/// collection, salted hashes of the client's SHA-256 digest, resume tokens with expiry. Confined to the server queue.
struct ServerAccounts {
    struct Password {
        let salt: String
        let hash: String
    }

    struct Token {
        let userID: String
        let expires: Date
    }

    /// A token of a reset, enrollment or verification e-mail.
    struct EmailToken {
        let userID: String
        let address: String
        let when: Date
        let kind: SentEmail.Kind
    }

    var passwords: [String: Password] = [:]
    var tokens: [String: Token] = [:]
    /// Tokens of reset, enrollment and verification e-mails.
    var emailTokens: [String: EmailToken] = [:]
    /// Every e-mail the server "sent", in order.
    var sentEmails: [SentEmail] = []
    /// OAuth credentials left by finished flows: token → secret, service and the service's user data.
    var pendingOAuth: [String: (secret: String, service: String, serviceData: EJSONObject)] = [:]
    /// accounts-2fa: each user's TOTP secret, and whether 2FA is on (`type: 'otp'`).
    var twoFactor: [String: (secret: String, enabled: Bool)] = [:]
    /// The time 2FA codes are checked at (`nil`: now).
    var twoFactorDate: Date?
    /// Passwordless login codes: per user, when they were made and the hashes of each address's code.
    var loginCodes: [String: (created: Date, byEmail: [String: String])] = [:]
    /// How long a login token lasts (Meteor: 90 days).
    var tokenLifetime: TimeInterval = 90 * 24 * 3600

    static func hash(digest: String, salt: String) -> String {
        SHA256.hexDigest(Array((salt + digest).utf8))
    }
}

extension DDPTestServer {
    /// Creates a user with a password (for tests and the demo); returns the user's id.
    @discardableResult
    public func createUser(username: String? = nil, email: String? = nil, password: String, profile: EJSONValue? = nil)
        -> String
    {
        perform {
            makeUser(username: username, email: email, digest: MeteorPassword.digest(password), profile: profile)
        }
    }

    /// Expires every login token now (to test clients whose resume fails).
    public func expireAllLoginTokens() {
        perform { accounts.tokens.removeAll() }
    }

    /// How long a new login token lasts (Meteor's `loginExpirationInDays`, default 90 days).
    public var loginTokenLifetime: TimeInterval {
        get { perform { accounts.tokenLifetime } }
        set { perform { accounts.tokenLifetime = newValue } }
    }

    /// Moves every login token's expiry earlier by `interval` (to test a server that refuses an expired resume).
    public func ageLoginTokens(by interval: TimeInterval) {
        perform {
            accounts.tokens = accounts.tokens.mapValues {
                ServerAccounts.Token(userID: $0.userID, expires: $0.expires.addingTimeInterval(-interval))
            }
        }
    }

    /// The number of valid login tokens.
    public var loginTokenCount: Int { perform { accounts.tokens.count } }

    /// Creates a user; without a digest it has no password (a passwordless user).
    func makeUser(username: String?, email: String?, digest: String?, profile: EJSONValue?) -> String {
        let id = SecureRandomGenerator().id()
        var fields = EJSONObject()
        if let username { fields["username"] = .string(username) }
        if let email { fields["emails"] = [["address": .string(email), "verified": false]] }
        if let profile { fields["profile"] = profile }
        _ = try? collection("users").insert(fields, id: id)
        if let digest {
            let salt = SecureRandomGenerator().secret(16)
            accounts.passwords[id] = ServerAccounts.Password(
                salt: salt, hash: ServerAccounts.hash(digest: digest, salt: salt))
        }
        return id
    }

    func registerAccountMethods() {
        registerPasswordMethods()
        registerPasswordlessMethods()
        registerTwoFactorMethods()
        registerTokenMethods()
        methods["createUser"] = { context in
            guard case .object(let options)? = context.params.first,
                let digest = options["password"]?["digest"]?.stringValue
            else {
                throw MeteorError(error: .number(400), reason: "Match failed")
            }
            let username = options["username"]?.stringValue
            let email = options["email"]?.stringValue
            guard username != nil || email != nil else {
                throw MeteorError(error: .number(400), reason: "Need to set a username or email")
            }
            if let username, self.user(byUsername: username) != nil {
                throw MeteorError(error: .number(403), reason: "Username already exists.")
            }
            if let email, self.user(byEmail: email) != nil {
                throw MeteorError(error: .number(403), reason: "Email already exists.")
            }
            let id = self.makeUser(username: username, email: email, digest: digest, profile: options["profile"])
            return self.logIn(id, context: context)
        }
        methods["login"] = { context in
            guard case .object(let options)? = context.params.first else {
                throw MeteorError(error: .number(400), reason: "Match failed")
            }
            if let oauth = options["oauth"] {
                return try self.oauthLogin(oauth, context: context)
            }
            if options["token"] != nil {
                return try self.passwordlessLogin(options, context: context)
            }
            if let token = options["resume"]?.stringValue {
                guard let entry = self.accounts.tokens[token] else {
                    throw MeteorError(
                        error: .number(403), reason: "You've been logged out by the server. Please log in again.")
                }
                guard entry.expires > Date() else {
                    self.accounts.tokens.removeValue(forKey: token)
                    throw MeteorError(error: .number(403), reason: "Your session has expired. Please log in again.")
                }
                context.setUserID(entry.userID)
                context.session?.loginToken = token
                return [
                    "id": .string(entry.userID), "token": .string(token), "tokenExpires": .date(entry.expires),
                    "type": "resume"
                ]
            }
            guard let selector = options["user"], selector.objectValue != nil,
                let digest = options["password"]?["digest"]?.stringValue
            else {
                throw MeteorError(error: .number(400), reason: "Unrecognized options for login request")
            }
            guard let id = self.user(selectedBy: selector), let password = self.accounts.passwords[id] else {
                throw MeteorError(error: .number(403), reason: "User not found")
            }
            guard ServerAccounts.hash(digest: digest, salt: password.salt) == password.hash else {
                throw MeteorError(error: .number(403), reason: "Incorrect password")
            }
            try self.checkTwoFactorCode(options["code"]?.stringValue, of: id)
            return self.logIn(id, context: context)
        }
        methods["logout"] = { context in
            if let token = context.session?.loginToken { self.accounts.tokens.removeValue(forKey: token) }
            context.session?.loginToken = nil
            context.setUserID(nil)
            return nil
        }
    }

    /// The user a selector (`{email}`, `{username}`, `{id}`) names.
    func user(selectedBy selector: EJSONValue?) -> String? {
        if let email = selector?["email"]?.stringValue { return user(byEmail: email) }
        if let username = selector?["username"]?.stringValue { return user(byUsername: username) }
        if let id = selector?["id"]?.stringValue, collection("users").document(id) != nil { return id }
        return nil
    }

    func user(byUsername username: String) -> String? {
        collection("users").find { $1["username"]?.stringValue == username }.first?.id
    }

    /// The user's e-mail addresses, in order.
    func addresses(of userID: String) -> [String] {
        collection("users").document(userID)?["emails"]?.arrayValue?.compactMap { $0["address"]?.stringValue } ?? []
    }

    /// The app's root URL, where Meteor's e-mailed links point (`http://127.0.0.1:<port>`).
    var rootURL: String { url.absoluteString.replacingOccurrences(of: "/websocket", with: "") }

    func user(byEmail email: String) -> String? {
        collection("users").find { _, fields in
            fields["emails"]?.arrayValue?.contains { $0["address"]?.stringValue?.lowercased() == email.lowercased() }
                ?? false
        }.first?.id
    }

    /// Logs the connection in with a new token; `type` is how (accounts-base returns it to the client).
    func logIn(_ userID: String, context: MethodContext, type: String = "password") -> EJSONValue {
        let token = SecureRandomGenerator().secret()
        let expires = Date().addingTimeInterval(accounts.tokenLifetime)
        accounts.tokens[token] = ServerAccounts.Token(userID: userID, expires: expires)
        context.setUserID(userID)
        context.session?.loginToken = token
        return ["id": .string(userID), "token": .string(token), "tokenExpires": .date(expires), "type": .string(type)]
    }
}
