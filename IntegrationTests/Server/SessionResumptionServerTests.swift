import DDPTestServer
import EJSON
import Foundation
import MeteorDDP
import XCTest

/// DDPTestServer resumes sessions as Meteor 3.5+'s server does (ddp-semantics §13), driven by a bare socket: it counts
/// what it sends, keeps a session whose socket was lost for its grace period (queueing what it would send, up to its
/// limit), resumes it only for the exact count, and never after `disconnect`, a kick, or with no grace period.
final class SessionResumptionServerTests: XCTestCase {
    private var server: DDPTestServer!

    private func start(_ configure: (inout DDPTestServer.Configuration) -> Void = { _ in }) async throws {
        var configuration = DDPTestServer.Configuration()
        configure(&configuration)
        server = DDPTestServer(configuration: configuration)
        try await server.start()
        server.publish("items") { _ in [Cursor(collection: "items")] }
        server.method("add") { context in
            .string(
                try context.collection("items").insert(
                    ["n": context.params.first ?? .null], id: context.randomID(forSequence: "/collection/items")))
        }
        server.perform { _ = try! server.collection("items").insert(["n": 1], id: "one") }
    }

    override func tearDown() async throws {
        try await server?.stop()
    }

    /// Connects, subscribes to `items` and reads until it is ready; returns the socket and the session id.
    private func subscribed() async throws -> (RawDDPSocket, String) {
        let socket = try await RawDDPSocket(url: server.url)
        socket.connect()
        guard case .connected(let session) = try await socket.next("connected") else {
            throw TimedOut(what: "connected first")
        }
        socket.send(.sub(id: "s1", name: "items", params: []))
        _ = try await socket.next(until: "ready") { if case .ready = $0 { true } else { false } }
        return (socket, session)
    }

    private func insert(_ id: String) {
        server.perform { _ = try! server.collection("items").insert(["n": 2], id: id) }
    }

    func testALostSocketsSessionIsResumedWithTheExactCountAndWhatItQueuedFollowsInOrder() async throws {
        try await start()
        let (first, session) = try await subscribed()
        XCTAssertEqual(first.receivedCount, 3, "connected, added, ready")
        server.severAllConnections()
        try await first.waitUntilClosed()
        // The server has handled the lost connection (its session waits, or ended) once no connection is left.
        await server.waitUntilNoSession()
        XCTAssertEqual(server.sessionsInGracePeriod, 1)
        insert("two")
        insert("three")

        let second = try await RawDDPSocket(url: server.url)
        second.connect(resuming: session, receivedCount: first.receivedCount)
        let received1 = try await second.next("connected")
        XCTAssertEqual(received1, .connected(session: session), "the same session")
        let received2 = try await second.next().documentID
        XCTAssertEqual(received2, "two", "what it queued, in order")
        let received3 = try await second.next().documentID
        XCTAssertEqual(received3, "three")
        // The subscription carries on: a new document arrives with no `sub` re-sent.
        insert("four")
        let received4 = try await second.next().documentID
        XCTAssertEqual(received4, "four")
        XCTAssertEqual(server.connectOutcomes, [.newSession, .resumed])
        second.close()
    }

    /// A count off by one (a message lost in the dying socket) gets a new session; the old one ends at once.
    func testAWrongCountGetsANewSessionAndTheWaitingOneEnds() async throws {
        try await start()
        let (first, session) = try await subscribed()
        server.severAllConnections()
        try await first.waitUntilClosed()
        // The server has handled the lost connection (its session waits, or ended) once no connection is left.
        await server.waitUntilNoSession()
        let second = try await RawDDPSocket(url: server.url)
        second.connect(resuming: session, receivedCount: first.receivedCount - 1)
        guard case .connected(let new) = try await second.next("connected") else { return XCTFail("connected") }
        XCTAssertNotEqual(new, session)
        XCTAssertEqual(server.connectOutcomes, [.newSession, .refusedCountMismatch])
        XCTAssertEqual(server.sessionsInGracePeriod, 0, "the old session ended at once")
        second.close()
    }

    /// `disconnect` says the client ends the session: no grace period; neither after a kick (Meteor's
    /// `connection.close()`), nor when the server keeps none, nor once it ran out.
    func testNoResumeAfterDisconnectAKickNoGracePeriodOrItsEnd() async throws {
        try await start()
        var ended: [String] = []
        let (byClient, first) = try await subscribed()
        byClient.send(.disconnect)
        byClient.close()
        ended.append(first)
        let (kicked, second) = try await subscribed()
        server.dropAllConnections()
        try await kicked.waitUntilClosed()
        // The server has handled the lost connection (its session waits, or ended) once no connection is left.
        await server.waitUntilNoSession()
        ended.append(second)
        let (expired, third) = try await subscribed()
        server.severAllConnections()
        try await expired.waitUntilClosed()
        // The server has handled the lost connection (its session waits, or ended) once no connection is left.
        await server.waitUntilNoSession()
        server.endSessionsInGracePeriod()
        ended.append(third)
        await server.waitUntilNoSession()
        XCTAssertEqual(server.sessionsInGracePeriod, 0)
        for session in ended {
            let socket = try await RawDDPSocket(url: server.url)
            socket.connect(resuming: session, receivedCount: 3)
            guard case .connected(let new) = try await socket.next("connected") else { return XCTFail("connected") }
            XCTAssertNotEqual(new, session)
            socket.close()
        }
        XCTAssertEqual(server.connectOutcomes.suffix(3), [.refusedNotWaiting, .refusedNotWaiting, .refusedNotWaiting])
    }

    /// Review finding: a kick racing a socket that was closing already (a network failure first) left the session in
    /// its grace period, still logged in. The kick ends it all the same.
    func testAKickEndsTheSessionEvenWhenItsSocketWasClosingAlready() async throws {
        try await start()
        var kicks = 0
        for _ in 0..<10 {
            let (socket, _) = try await subscribed()
            server.severAllConnections()
            let kicked = server.dropAllConnections()
            kicks += kicked
            try await socket.waitUntilClosed()
            await server.waitUntilNoSession()
            // The kick was queued before the close: handled by now (`sessionsInGracePeriod` reads on the server queue).
            if kicked > 0 { XCTAssertEqual(server.sessionsInGracePeriod, 0, "kicked while severed") }
            server.endSessionsInGracePeriod()
        }
        XCTAssertGreaterThan(kicks, 0, "some kick raced the closing socket")
    }

    func testWithNoGracePeriodASessionEndsWithItsSocketAsBeforeMeteor35() async throws {
        try await start { $0.disconnectGracePeriod = .zero }
        let (socket, session) = try await subscribed()
        server.severAllConnections()
        try await socket.waitUntilClosed()
        // The server has handled the lost connection (its session waits, or ended) once no connection is left.
        await server.waitUntilNoSession()
        XCTAssertEqual(server.sessionsInGracePeriod, 0)
        let again = try await RawDDPSocket(url: server.url)
        again.connect(resuming: session, receivedCount: socket.receivedCount)
        guard case .connected(let new) = try await again.next("connected") else { return XCTFail("connected") }
        XCTAssertNotEqual(new, session)
        again.close()
    }

    /// One message more than `maxMessageQueueLength` waiting for the client, and the session ends at once.
    func testTheGracePeriodsQueueOverflowingEndsTheSession() async throws {
        try await start { $0.maxMessageQueueLength = 2 }
        let (socket, _) = try await subscribed()
        server.severAllConnections()
        try await socket.waitUntilClosed()
        // The server has handled the lost connection (its session waits, or ended) once no connection is left.
        await server.waitUntilNoSession()
        insert("two")
        insert("three")
        XCTAssertEqual(server.sessionsInGracePeriod, 1, "two messages queued: at the limit")
        insert("four")
        XCTAssertEqual(server.sessionsInGracePeriod, 0)
        XCTAssertEqual(server.gracePeriodOverflows, 1)
    }

    /// On a live session a `sub` re-sent with its id is ignored, and a `method` re-sent with its id runs again.
    func testOnAResumedSessionAReSentSubIsIgnoredAndAReSentMethodRunsAgain() async throws {
        try await start()
        let (first, session) = try await subscribed()
        server.severAllConnections()
        try await first.waitUntilClosed()
        // The server has handled the lost connection (its session waits, or ended) once no connection is left.
        await server.waitUntilNoSession()
        let second = try await RawDDPSocket(url: server.url)
        second.connect(resuming: session, receivedCount: first.receivedCount)
        let received5 = try await second.next("connected")
        XCTAssertEqual(received5, .connected(session: session))
        second.send(.sub(id: "s1", name: "items", params: []))
        var seen: [ServerMessage] = []
        for _ in 0..<2 {
            second.send(.method(id: "m1", method: "add", params: [3], randomSeed: nil))
            seen += try await second.next(until: "result") { if case .result = $0 { true } else { false } }
        }
        XCTAssertFalse(seen.contains { if case .ready = $0 { true } else { false } }, "the sub was ignored: \(seen)")
        XCTAssertEqual(seen.count { if case .result(id: "m1", _, _) = $0 { true } else { false } }, 2, "\(seen)")
        XCTAssertEqual(server.runs(ofCall: "m1", inSession: session), 2)
        XCTAssertEqual(server.callsRunMoreThanOnce, ["\(session) m1"])
        second.close()
    }
}

extension ServerMessage {
    /// The document an `added`, `changed` or `removed` is about.
    fileprivate var documentID: String? {
        switch self {
        case .added(_, let id, _), .changed(_, let id, _, _), .removed(_, let id): id
        default: nil
        }
    }
}
