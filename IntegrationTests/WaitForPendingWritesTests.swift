import DDPTestServer
import EJSON
import Foundation
@_spi(Testing) import MeteorDDP
import NIOConcurrencyHelpers
import XCTest

/// `waitForPendingWrites()` against DDPTestServer: it returns once the calls made before it have completed (with the
/// offline store, once the store on disk holds no call and holds their writes), not before; it throws when the client
/// is closed first.
final class WaitForPendingWritesTests: XCTestCase {
    private var server: DDPTestServer!

    override func setUp() async throws {
        server = DDPTestServer()
        try await server.start()
        server.publish("items") { _ in [Cursor(collection: "items")] }
        server.method("items.add") { context in
            .string(try context.collection("items").insert(["n": 1], id: "added"))
        }
    }

    override func tearDown() async throws {
        try await server?.stop()
    }

    private func connected(_ configure: (inout DDPClient.Configuration) -> Void = { _ in }) async throws -> DDPClient {
        var configuration = DDPClient.Configuration()
        configure(&configuration)
        let client = DDPClient(url: server.url, configuration: configuration)
        client.connect()
        try await withTimeout(10, "ready") { try await client.subscribe("items").ready() }
        return client
    }

    /// Makes `items.add` while the server holds it, waits for pending writes (not returned while the call is held),
    /// then lets the server answer and returns once the wait did. Returns the call's task.
    private func waitForPendingWritesAcrossAHeldCall(_ client: DDPClient) async throws -> Task<EJSONValue?, any Error> {
        server.holdMethods(named: ["items.add"])
        let call = Task { try await client.call("items.add") }
        _ = await server.waitForMessage { if case .method(_, "items.add", _, _) = $0 { true } else { false } }
        let returned = NIOLockedValueBox(false)
        let wait = Task {
            try await client.waitForPendingWrites()
            returned.withLockedValue { $0 = true }
        }
        try await withTimeout(10, "the wait registered") {
            while client.pendingWritesWaitCount == 0 { await Task.yield() }
        }
        client.waitUntilIdle()
        XCTAssertFalse(returned.withLockedValue { $0 }, "the call waits at the server: so does the wait")
        server.releaseHeldMethods()
        try await withTimeout(10, "the wait") { try await wait.value }
        return call
    }

    func testItReturnsOnceTheCallsBeforeItCompletedAndWhatTheyWroteIsOnDisk() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "wait-for-pending-writes-\(UUID().uuidString)/cache.sqlite")
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let client = try await connected { $0.persistence = .sqlite(at: file) }
        defer { client.close() }
        try await withTimeout(10, "no call: at once") { try await client.waitForPendingWrites() }

        let call = try await waitForPendingWritesAcrossAHeldCall(client)
        let stored = try SQLiteStore(fileURL: file).load()
        XCTAssertEqual(stored.methods.map(\.name), [], "the call completed and left the store before the wait returned")
        XCTAssertTrue(
            stored.documents.contains { $0.key.documentID == "added" }, "its write is on disk when the wait returns")
        _ = try await call.value
        XCTAssertEqual(client.database.collection("items").documents.map(\.id), ["added"])
    }

    /// Without the offline store: it returns once the call completed, its write in the cache.
    func testWithoutTheStoreItReturnsOnceTheCallsBeforeItCompleted() async throws {
        let client = try await connected()
        defer { client.close() }
        let call = try await waitForPendingWritesAcrossAHeldCall(client)
        XCTAssertEqual(client.database.collection("items").documents.map(\.id), ["added"], "its write is in the cache")
        _ = try await call.value
    }

    func testAClosedClientEndsTheWait() async throws {
        let client = try await connected()
        server.holdMethods(named: ["items.add"])
        _ = try client.call("items.add") { _ in }
        _ = await server.waitForMessage { if case .method(_, "items.add", _, _) = $0 { true } else { false } }
        let wait = Task { try await client.waitForPendingWrites() }
        client.close()
        do {
            try await withTimeout(10, "the wait") { try await wait.value }
            XCTFail("returned though the call never completed")
        } catch let error as DDPError {
            XCTAssertEqual(error.code, .clientClosed)
        }
    }
}
