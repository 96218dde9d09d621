import DDPTestServer
import Foundation
import MeteorDDP
import TestSupport
import XCTest

/// accounts-2fa: turning it on with a code from the activation QR code, and logging in with a code, over a real socket.
final class TwoFactorLoginTests: XCTestCase {
    func testRFC6238Vectors() {
        // RFC 6238, appendix B (SHA-1, the secret "12345678901234567890"), the last six of its eight digits.
        let secret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
        XCTAssertEqual(TOTP.code(secret: secret, at: Date(timeIntervalSince1970: 59)), "287082")
        XCTAssertEqual(TOTP.code(secret: secret, at: Date(timeIntervalSince1970: 1_111_111_109)), "081804")
        XCTAssertEqual(TOTP.code(secret: secret, at: Date(timeIntervalSince1970: 1_234_567_890)), "005924")
        XCTAssertEqual(TOTP.code(secret: secret, at: Date(timeIntervalSince1970: 2_000_000_000)), "279037")
    }

    func testTurningTwoFactorOnThenLoggingInWithACode() async throws {
        let server = DDPTestServer()
        try await server.start()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        server.twoFactorDate = now
        server.createUser(email: "ada@example.com", password: "correct horse")
        let client = DDPClient(url: server.url)
        try await client.connect(timeout: .seconds(10))
        _ = try await withTimeout(10, "login") {
            try await client.login(email: "ada@example.com", password: "correct horse")
        }
        let enabledBefore = try await client.has2faEnabled()
        XCTAssertFalse(enabledBefore)
        let activation = try await withTimeout(10, "QR code") {
            try await client.generate2faActivationQRCode(appName: "Todos")
        }
        XCTAssertTrue(
            activation.uri.hasPrefix("otpauth://totp/Todos:ada@example.com?secret=\(activation.secret)"), activation.uri
        )
        do {
            try await client.enable2fa(
                code: "000000" == TOTP.code(secret: activation.secret, at: now) ? "111111" : "000000")
            XCTFail("a wrong code")
        } catch let error as MeteorError {
            XCTAssertTrue(error.isTwoFactorCodeInvalid, "\(error)")
        }
        let code = try XCTUnwrap(TOTP.code(secret: activation.secret, at: now))
        try await withTimeout(10, "enable") { try await client.enable2fa(code: code) }
        let enabledAfter = try await client.has2faEnabled()
        XCTAssertTrue(enabledAfter)
        try await withTimeout(10, "logout") { try await client.logout() }
        do {
            _ = try await withTimeout(10, "password only") {
                try await client.login(email: "ada@example.com", password: "correct horse")
            }
            XCTFail("2FA is on")
        } catch let error as MeteorError where error.isTwoFactorCodeRequired {
            XCTAssertEqual(error.reason, "2FA code must be informed")
        }
        XCTAssertNil(client.account)
        // A code from 4 minutes ago is still accepted (10 steps of 30 s either side, as node-2fa checks).
        let late = try XCTUnwrap(TOTP.code(secret: activation.secret, at: now.addingTimeInterval(-240)))
        let account = try await withTimeout(10, "with a code") {
            try await client.login(email: "ada@example.com", password: "correct horse", code: late)
        }
        XCTAssertEqual(client.account, account)
        do {
            _ = try await client.generate2faActivationQRCode(appName: "Todos")
            XCTFail("on already")
        } catch let error as MeteorError {
            XCTAssertEqual(error.error, "2fa-activated")
        }
        try await withTimeout(10, "disable") { try await client.disable2fa() }
        let enabledAtTheEnd = try await client.has2faEnabled()
        XCTAssertFalse(enabledAtTheEnd)
        client.close()
        try await server.stop()
    }
}
