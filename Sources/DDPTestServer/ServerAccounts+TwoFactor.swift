import EJSON
import Foundation
import MeteorDDP

extension DDPTestServer {
    /// The time 2FA codes are checked at (`nil`, the default: now). A test fixes it and computes the user's code
    /// with ``TOTP/code(secret:at:)``, as an authenticator app would.
    public var twoFactorDate: Date? {
        get { perform { accounts.twoFactorDate } }
        set { perform { accounts.twoFactorDate = newValue } }
    }

    /// accounts-2fa's check at a password (or passwordless) login of a user with 2FA on.
    func checkTwoFactorCode(_ code: String?, of userID: String) throws {
        guard let twoFactor = accounts.twoFactor[userID], twoFactor.enabled else { return }
        guard let code, !code.isEmpty else {
            throw MeteorError(error: "no-2fa-code", reason: "2FA code must be informed")
        }
        guard TOTP.isValid(code, secret: twoFactor.secret, at: accounts.twoFactorDate ?? Date()) else {
            throw MeteorError(error: "invalid-2fa-code", reason: "Invalid 2FA code")
        }
    }

    func registerTwoFactorMethods() {
        methods["generate2faActivationQrCode"] = { context in
            guard let appName = context.params.first?.stringValue else {
                throw MeteorError(error: .number(400), reason: "Match failed")
            }
            guard let userID = context.userID, let user = self.collection("users").document(userID) else {
                throw MeteorError(
                    error: .number(400), reason: "There must be a user logged in to generate the QR code.")
            }
            if self.accounts.twoFactor[userID]?.enabled == true {
                throw MeteorError(
                    error: "2fa-activated",
                    reason:
                        "The 2FA is activated. You need to disable the 2FA first "
                        + "before trying to generate a new activation code."
                )
            }
            let secret = TOTP.newSecret()
            self.accounts.twoFactor[userID] = (secret, false)
            let name = appName.trimmingCharacters(in: .whitespaces)
            let account =
                user["username"]?.stringValue ?? user["emails"]?.arrayValue?.first?["address"]?.stringValue ?? userID
            let uri = "otpauth://totp/\(name):\(account)?secret=\(secret)&issuer=\(name)"
            // Meteor draws the QR code (qrcode-svg); the test server's SVG only carries the URI as text.
            let svg = "<svg xmlns=\"http://www.w3.org/2000/svg\"><text>\(uri)</text></svg>"
            return ["svg": .string(svg), "secret": .string(secret), "uri": .string(uri)]
        }
        methods["enableUser2fa"] = { context in
            guard let code = context.params.first?.stringValue else {
                throw MeteorError(error: .number(400), reason: "Match failed")
            }
            guard let userID = context.userID else {
                throw MeteorError(error: .number(400), reason: "No user logged in.")
            }
            guard let twoFactor = self.accounts.twoFactor[userID] else {
                throw MeteorError(
                    error: .number(500),
                    reason:
                        "The user does not have a secret generated. "
                        + "You may have to call the function generateSvgCode first."
                )
            }
            guard TOTP.isValid(code, secret: twoFactor.secret, at: self.accounts.twoFactorDate ?? Date()) else {
                throw MeteorError(error: "invalid-2fa-code", reason: "Invalid 2FA code")
            }
            self.accounts.twoFactor[userID] = (twoFactor.secret, true)
            return nil
        }
        methods["disableUser2fa"] = { context in
            guard let userID = context.userID else {
                throw MeteorError(error: .number(400), reason: "No user logged in.")
            }
            self.accounts.twoFactor.removeValue(forKey: userID)
            return nil
        }
        methods["has2faEnabled"] = { context in
            guard let userID = context.userID else {
                throw MeteorError(error: "no-logged-user", reason: "No user logged in.")
            }
            return .bool(self.accounts.twoFactor[userID]?.enabled == true)
        }
    }
}
