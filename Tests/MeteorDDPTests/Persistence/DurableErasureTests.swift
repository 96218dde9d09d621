import EJSON
import Foundation
import XCTest

@_spi(Testing) @testable import MeteorDDP

/// After a logout, a refused resume or ``DDPClient/clearPersistence()``, no byte of the last user's documents,
/// calls or account is left in any file of the store: the SQLite file, its `-wal` and `-shm`, the account file.
/// (The SIGKILL right after a logout is the kill test's logout round, IntegrationTests/Offline.)
final class DurableErasureTests: XCTestCase {
    private var directory: URL!
    private var file: URL { directory.appendingPathComponent("cache.sqlite") }
    private var accountFile: URL { directory.appendingPathComponent("account.json") }

    /// What only the user's data holds: their name and e-mail (their document), a task's text and a call's
    /// parameter, and their login token (the account file).
    private let secrets = [
        "zebedee-quixote", "zebedee.q@example.invalid", "feed-the-quokka-7731", "call-param-9912", "tok-secret-5521"
    ]

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("erasure-\(UUID().uuidString)")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    private func launch(_ configure: (inout DDPClient.Configuration) -> Void = { _ in }) -> ClientHarness {
        let harness = ClientHarness(publishesLoggedInUser: false) { configuration in
            configuration.persistence = .sqlite(at: file)
            configuration.accountStore = FileAccountStore(url: accountFile)
            configure(&configuration)
        }
        harness.client.defineStub("note") { context in
            _ = try context.collection("notes").insert(["text": context.params[0] ?? nil])
            return nil
        }
        return harness
    }

    /// The secrets found in the store's files (every file in the directory: `-wal`, `-shm` and the account's too).
    private func secretsOnDisk() throws -> [String] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        var found: [String] = []
        for name in names.sorted() {
            let bytes = try Data(contentsOf: directory.appendingPathComponent(name))
            for secret in secrets where bytes.range(of: Data(secret.utf8)) != nil {
                found.append("\(secret) in \(name)")
            }
        }
        return found
    }

    private func methodID(_ harness: ClientHarness, _ name: String) async throws -> String {
        let transport = harness.transport
        try await withTimeout(5, "\(name) sent") {
            await transport.waitUntilSent(count: 1) { if case .method(_, name, _, _) = $0 { true } else { false } }
        }
        return try XCTUnwrap(
            harness.sent.compactMap { if case .method(let id, name, _, _) = $0 { id } else { nil } }.last)
    }

    /// Run 1: logged in as Zebedee, their document and a task in the cache, an unanswered call: all on disk.
    private func logInAndStoreTheUsersData(_ harness: ClientHarness) async throws {
        harness.establishConnection()
        let login = Task { try await harness.client.login(email: "zebedee.q@example.invalid", password: "pw") }
        let loginID = try await methodID(harness, "login")
        harness.receive(
            .added(
                collection: "users", id: "zebedee",
                fields: ["username": "zebedee-quixote", "emails": [["address": "zebedee.q@example.invalid"]]]))
        harness.receive(.updated(methodIDs: [loginID]))
        harness.receive(
            .result(
                id: loginID,
                result: [
                    "id": "zebedee", "token": "tok-secret-5521",
                    "tokenExpires": .date(Date(timeIntervalSinceNow: 86_400))
                ],
                error: nil))
        harness.flushData()
        _ = try await withTimeout(5, "login returns") { try await login.value }
        harness.receive(.added(collection: "tasks", id: "t1", fields: ["text": "feed-the-quokka-7731"]))
        _ = try harness.client.call("note", params: ["call-param-9912"]) { _ in }
        harness.flushData()
        harness.client.waitUntilPersisted()
        // The method of finding them works: every secret is on disk now.
        let found = try secretsOnDisk()
        XCTAssertEqual(found.count, secrets.count, "\(found)")
    }

    func testLogoutLeavesNoByteOfTheUsersDataInAnyFileOfTheStore() async throws {
        let harness = launch()
        try await logInAndStoreTheUsersData(harness)
        // The unanswered call completes first (a call still unanswered at the logout stays durable, and is not the
        // last user's: `logout` is a wait method).
        let noteID = try await methodID(harness, "note")
        harness.receive(.result(id: noteID, result: nil, error: nil))
        harness.receive(.updated(methodIDs: [noteID]))
        harness.flushData()
        let logout = Task { try await harness.client.logout() }
        let logoutID = try await methodID(harness, "logout")
        harness.receive(.result(id: logoutID, result: nil, error: nil))
        harness.receive(.updated(methodIDs: [logoutID]))
        harness.flushData()
        try await withTimeout(10, "logout returns") { try await logout.value }
        XCTAssertEqual(try secretsOnDisk(), [], "right after logout")
        harness.client.close()
        harness.settle()
        harness.client.waitUntilPersisted()
        XCTAssertEqual(try secretsOnDisk(), [], "after close()")
    }

    /// Run 1 logged in with data and an unanswered call, closed; run 2 restored, connected, its resume sent.
    private func relaunchWithTheResumeSent() async throws -> (ClientHarness, Task<Bool, Never>, String) {
        do {
            let first = launch()
            try await logInAndStoreTheUsersData(first)
            first.client.close()
            first.settle()
            first.client.waitUntilPersisted()
        }
        let second = launch()
        XCTAssertEqual(second.client.account?.userID, "zebedee", "restored")
        let events = second.client.loginEvents
        let loggedOut = Task {
            for await event in events { if case .loggedOut = event { return true } }
            return false
        }
        second.establishConnection()
        return (second, loggedOut, try await methodID(second, "login"))
    }

    private func refuse(_ harness: ClientHarness, _ resumeID: String, _ error: MeteorError) {
        harness.receive(.result(id: resumeID, result: nil, error: error))
        harness.receive(.updated(methodIDs: [resumeID]))
        harness.flushData()
    }

    func testARefusedResumeErasesThePreviousUsersData() async throws {
        let (second, loggedOut, resumeID) = try await relaunchWithTheResumeSent()
        refuse(
            second, resumeID,
            MeteorError(error: .number(403), reason: "You've been logged out by the server. Please log in again."))
        let refused = try await withTimeout(5, "the refused resume logs out") { await loggedOut.value }
        XCTAssertTrue(refused)
        XCTAssertNil(second.client.account)
        second.client.waitUntilPersisted()
        // The restored call is still unanswered: made by the last user, it is erased with the rest (it still goes out).
        XCTAssertEqual(try secretsOnDisk(), [], "after the refused resume")
        XCTAssertEqual(try SQLiteStore(fileURL: file).load().methods.map(\.name), [])
        _ = try await methodID(second, "note")
    }

    func testAResumeFailingForAnotherReasonKeepsTheUnansweredCallsDurable() async throws {
        let (second, loggedOut, resumeID) = try await relaunchWithTheResumeSent()
        refuse(second, resumeID, MeteorError(error: "too-many-requests", reason: "Error, too many requests."))
        let refused = try await withTimeout(5, "the failed resume logs out") { await loggedOut.value }
        XCTAssertTrue(refused, "Meteor logs out on any failed resume")
        second.client.waitUntilPersisted()
        XCTAssertEqual(try SQLiteStore(fileURL: file).load().methods.map(\.name), ["note"], "the user's own work")
        let found = try secretsOnDisk()
        XCTAssertFalse(found.contains { $0.hasPrefix("zebedee-quixote") }, "their document is erased: \(found)")
        XCTAssertFalse(found.contains { $0.hasPrefix("tok-secret") }, "and their account: \(found)")
    }

    func testClearPersistenceTwiceAtOnceReturnsBoth() async throws {
        let harness = launch()
        try await logInAndStoreTheUsersData(harness)
        let client = harness.client
        try await withTimeout(10, "both erasures return") {
            async let first: Void = client.clearPersistence()
            async let second: Void = client.clearPersistence()
            _ = try await (first, second)
        }
        XCTAssertEqual(try secretsOnDisk(), [])
    }

    func testClearPersistenceOnAClosedClientErasesEverythingTheLogoutWouldHaveKept() async throws {
        let harness = launch { $0.persistence?.keepsCacheOnLogout = true }
        try await logInAndStoreTheUsersData(harness)
        harness.client.close()
        harness.settle()
        XCTAssertFalse(try secretsOnDisk().isEmpty, "closing erases nothing")
        try await harness.client.clearPersistence()
        XCTAssertEqual(try secretsOnDisk(), [])
        XCTAssertNil(harness.client.account)
        XCTAssertEqual(harness.client.database.collectionNames, [], "the cache in memory is empty too")
        // The store is empty for the next launch, and usable.
        let next = launch()
        XCTAssertEqual(next.client.database.collectionNames, [])
        XCTAssertNil(next.client.account)
        // Twice is fine.
        try await harness.client.clearPersistence()
    }

    func testDeleteFilesRemovesTheStoreAndItsCompanions() throws {
        do {
            let harness = launch()
            harness.establishConnection()
            harness.receive(.added(collection: "tasks", id: "t1", fields: ["text": "feed-the-quokka-7731"]))
            harness.flushData()
            harness.client.waitUntilPersisted()
        }
        try Data("not a database".utf8).write(to: directory.appendingPathComponent("cache.sqlite.unusable-1"))
        try SQLiteStore.deleteFiles(at: file)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), [])
    }
}
