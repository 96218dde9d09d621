import DDPTestServer
import Foundation
import MeteorDDP
import TestSupport
import XCTest

/// accounts-oauth's last step from a native app: the credential the browser flow left on the server logs in, once.
final class OAuthLoginTests: XCTestCase {
    func testTheCredentialLogsInOnceAsTheServicesUser() async throws {
        let server = DDPTestServer()
        try await server.start()
        server.addPendingOAuthCredential(
            token: "credential-1", secret: "secret-1", service: "github", serviceData: ["id": 42, "username": "ada"])
        let client = DDPClient(url: server.url)
        let events = client.loginEvents
        try await client.connect(timeout: .seconds(10))
        do {
            _ = try await withTimeout(10, "wrong secret") {
                try await client.login(oauthCredentialToken: "credential-1", credentialSecret: "wrong")
            }
            XCTFail("the secret does not match")
        } catch let error as MeteorError where error.isLoginCancelled {
            XCTAssertEqual(error.reason, "No matching login attempt found")
        }
        let account = try await withTimeout(10, "login") {
            try await client.login(oauthCredentialToken: "credential-1", credentialSecret: "secret-1")
        }
        XCTAssertEqual(client.account, account)
        let received = try await next(2, of: events)
        guard case .loggedIn(_, type: "github") = received[1] else { return XCTFail("\(received[1])") }
        do {
            _ = try await withTimeout(10, "used") {
                try await client.login(oauthCredentialToken: "credential-1", credentialSecret: "secret-1")
            }
            XCTFail("a credential logs in once")
        } catch let error as MeteorError where error.isLoginCancelled {}
        // A second flow for the same GitHub user logs in as the same Meteor user.
        server.addPendingOAuthCredential(
            token: "credential-2", secret: "secret-2", service: "github", serviceData: ["id": 42, "username": "ada"])
        let again = try await withTimeout(10, "second flow") {
            try await client.login(oauthCredentialToken: "credential-2", credentialSecret: "secret-2")
        }
        XCTAssertEqual(again.userID, account.userID)
        client.close()
        try await server.stop()
    }
}
