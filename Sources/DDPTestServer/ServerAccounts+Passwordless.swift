import EJSON
import Foundation
import MeteorDDP

extension DDPTestServer {
    /// How long a passwordless login code lasts (Meteor's `loginTokenExpirationHours`, 1 by default).
    static let loginCodeLifetime: TimeInterval = 3600

    /// Moves the passwordless login codes' creation back by `interval` (to test expired codes).
    public func ageLoginCodes(by interval: TimeInterval) {
        perform {
            accounts.loginCodes = accounts.loginCodes.mapValues {
                ($0.created.addingTimeInterval(-interval), $0.byEmail)
            }
        }
    }

    private static func codeHash(_ email: String, _ code: String) -> String {
        SHA256.hexDigest(Array((email + code).utf8))
    }

    func registerPasswordlessMethods() {
        // accounts-passwordless' requestLoginTokenForUser: a 6-character code per address, e-mailed; the user is
        // created first from userData unless that is disabled.
        methods["requestLoginTokenForUser"] = { context in
            guard case .object(let request)? = context.params.first, let selector = request["selector"] else {
                throw MeteorError(error: .number(400), reason: "Match failed")
            }
            var userID = self.user(selectedBy: selector)
            let isNewUser = userID == nil
            if userID == nil {
                guard request["options"]?["userCreationDisabled"] != true else {
                    throw MeteorError(error: .number(403), reason: "User not found")
                }
                let data = request["userData"]
                let username = data?["username"]?.stringValue
                let email = data?["email"]?.stringValue
                guard username != nil || email != nil else {
                    throw MeteorError(error: .number(400), reason: "Need to set a username or email")
                }
                userID = self.makeUser(username: username, email: email, digest: nil, profile: data?["profile"])
            }
            guard let userID else { throw MeteorError(error: .number(403), reason: "User could not be created") }
            let addresses = self.addresses(of: userID).filter { address in
                selector["email"]?.stringValue.map { $0.lowercased() == address.lowercased() } ?? true
            }
            guard !addresses.isEmpty else {
                throw MeteorError(error: .number(403), reason: "Login tokens could not be generated")
            }
            var byEmail: [String: String] = [:]
            for address in addresses {
                let code = SecureRandomGenerator().hexString(6).uppercased()
                byEmail[address] = Self.codeHash(address, code)
                self.accounts.sentEmails.append(
                    SentEmail(
                        to: address, kind: .loginToken, token: code,
                        url: "\(self.rootURL)/?loginToken=\(code)&selector=\(address)"))
            }
            self.accounts.loginCodes[userID] = (Date(), byEmail)
            return ["selector": selector, "userData": request["userData"] ?? .null, "isNewUser": .bool(isNewUser)]
        }
    }

    /// accounts-passwordless' login handler (`{selector, token}`): the code of the selected address, not expired;
    /// it verifies the address and is used up.
    func passwordlessLogin(_ options: EJSONObject, context: MethodContext) throws -> EJSONValue {
        guard let code = options["token"]?.stringValue?.uppercased(), code.count <= 6,
            let selector = options["selector"]
        else {
            throw MeteorError(error: .number(400), reason: "Match failed")
        }
        guard let userID = user(selectedBy: selector) else {
            throw MeteorError(error: .number(403), reason: "User not found")
        }
        guard let codes = accounts.loginCodes[userID] else {
            throw MeteorError(error: .number(403), reason: "User has no token set")
        }
        guard Date() < codes.created.addingTimeInterval(Self.loginCodeLifetime) else {
            throw MeteorError(error: .number(403), reason: "Expired token")
        }
        guard let email = selector["email"]?.stringValue, codes.byEmail[email] == Self.codeHash(email, code) else {
            throw MeteorError(
                error: .number(403), reason: selector["email"] != nil ? "Email or token mismatch" : "Token mismatch")
        }
        try checkTwoFactorCode(options["code"]?.stringValue, of: userID)
        accounts.loginCodes.removeValue(forKey: userID)
        _ = markEmailVerified(email, of: userID)
        return logIn(userID, context: context, type: "passwordless")
    }
}
