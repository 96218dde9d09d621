import Foundation
import NIOConcurrencyHelpers
import XCTest

@testable import MeteorDDP

/// The contract every ``AccountStore`` must pass, run against both stores.
final class AccountStoreTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "AccountStoreTests-\(UUID().uuidString)")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    private func assertContract(_ store: any AccountStore, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertNil(try store.load(), file: file, line: line)
        let account = Account(userID: "u1", token: "t1", tokenExpires: Date(timeIntervalSince1970: 1_893_456_000))
        try store.save(account)
        XCTAssertEqual(try store.load(), account, file: file, line: line)
        try store.save(nil)
        XCTAssertNil(try store.load(), file: file, line: line)
    }

    func testInMemoryStoreKeepsTheContract() throws {
        try assertContract(InMemoryAccountStore())
    }

    func testFileStoreKeepsTheContractAndWritesAFileOnlyItsOwnerCanRead() throws {
        let url = directory.appendingPathComponent("account.json")
        let store = FileAccountStore(url: url)
        try assertContract(store)
        try store.save(Account(userID: "u", token: "t"))
        let permissions = try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? NSNumber
        XCTAssertEqual(permissions?.intValue, 0o600)
        XCTAssertEqual(
            try FileAccountStore(url: url).load()?.userID, "u", "a new store (a restarted client) reads it back")
    }

    /// Two erasures at once (`clearPersistence()` twice, a logout beside it) both succeed: the file checked, then
    /// removed by the other thread, used to throw `unwritableStore` (a CI run of DurableErasureTests). Concurrent
    /// saves likewise: every load sees a whole account or none, and every save succeeds.
    func testConcurrentSavesAndErasuresAllSucceedAndNeverShowAHalfWrittenFile() throws {
        let store = FileAccountStore(url: directory.appendingPathComponent("account.json"))
        let account = Account(userID: "u", token: "t")
        let failures = NIOLockedValueBox<[String]>([])
        for _ in 0..<50 {
            try store.save(account)
            DispatchQueue.concurrentPerform(iterations: 8) { index in
                do {
                    if index % 2 == 0 {
                        try store.save(nil)
                    } else {
                        try store.save(account)
                        if let loaded = try store.load() { XCTAssertEqual(loaded, account) }
                    }
                } catch {
                    failures.withLockedValue { $0.append("\(error)") }
                }
            }
        }
        XCTAssertEqual(failures.withLockedValue { $0 }, [])
        try store.save(nil)
        XCTAssertNil(try store.load())
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: directory.path), [], "no temporary file is left")
    }

    func testFileStoreRejectsACorruptFile() throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent("account.json")
        XCTAssertTrue(
            FileManager.default.createFile(
                atPath: url.path, contents: Data("{not json".utf8), attributes: [.posixPermissions: 0o600]))
        XCTAssertThrowsError(try FileAccountStore(url: url).load()) { error in
            XCTAssertEqual((error as? AccountError)?.kind, .unreadableStore)
        }
    }

    func testFileStoreRejectsAFileOthersCanRead() throws {
        let url = directory.appendingPathComponent("account.json")
        let store = FileAccountStore(url: url)
        try store.save(Account(userID: "u", token: "t"))
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: url.path)
        XCTAssertThrowsError(try store.load()) { error in
            XCTAssertEqual((error as? AccountError)?.kind, .unreadableStore)
        }
    }

    func testAClientWithACorruptStoreStartsLoggedOut() throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent("account.json")
        XCTAssertTrue(
            FileManager.default.createFile(
                atPath: url.path, contents: Data("garbage".utf8), attributes: [.posixPermissions: 0o600]))
        let harness = ClientHarness { $0.accountStore = FileAccountStore(url: url) }
        XCTAssertNil(harness.client.account)
    }
}
