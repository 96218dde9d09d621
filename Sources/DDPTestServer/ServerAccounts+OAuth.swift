import EJSON
import Foundation
import MeteorDDP

extension DDPTestServer {
    /// Leaves a credential as a finished OAuth flow leaves it on a Meteor server (`OAuth._storePendingCredential`):
    /// the next `login({oauth: {credentialToken, credentialSecret}})` with both logs in as the service's user, created
    /// at the first login (`Accounts.updateOrCreateUserFromExternalService`). Returns nothing; the credential is used
    /// once.
    public func addPendingOAuthCredential(token: String, secret: String, service: String, serviceData: EJSONObject) {
        perform { accounts.pendingOAuth[token] = (secret, service, serviceData) }
    }

    /// accounts-oauth's login handler.
    func oauthLogin(_ oauth: EJSONValue, context: MethodContext) throws -> EJSONValue {
        guard let token = oauth["credentialToken"]?.stringValue else {
            throw MeteorError(error: .number(400), reason: "Match failed")
        }
        let secret = oauth["credentialSecret"]?.stringValue
        guard let pending = accounts.pendingOAuth[token], pending.secret == secret else {
            throw MeteorError(error: MeteorError.loginCancelledCode, reason: "No matching login attempt found")
        }
        accounts.pendingOAuth.removeValue(forKey: token)
        guard let serviceID = pending.serviceData["id"] else {
            throw MeteorError(error: .number(400), reason: "Service data has no id")
        }
        let users = collection("users")
        let existing = users.find { _, fields in fields["services"]?[pending.service]?["id"] == serviceID }.first?.id
        let userID: String
        if let existing {
            userID = existing
            _ = try? users.update(userID, ["$set": ["services.\(pending.service)": .object(pending.serviceData)]])
        } else {
            userID = SecureRandomGenerator().id()
            _ = try? users.insert(["services": [pending.service: .object(pending.serviceData)]], id: userID)
        }
        return logIn(userID, context: context, type: pending.service)
    }
}
