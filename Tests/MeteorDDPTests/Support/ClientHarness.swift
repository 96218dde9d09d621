import EJSON
import Foundation
import XCTest

@_spi(Testing) @testable import MeteorDDP

/// A client wired to an in-memory transport and a manual clock: every interleaving is chosen by the test.
final class ClientHarness: Sendable {
    let transport = InMemoryTransport()
    let scheduler = ManualScheduler()
    let client: DDPClient

    init(publishesLoggedInUser: Bool = true, configure: (inout DDPClient.Configuration) -> Void = { _ in }) {
        self.publishesLoggedInUser = publishesLoggedInUser
        var configuration = DDPClient.Configuration()
        configuration.scheduler = scheduler
        configuration.retryStrategy = RetryStrategy(fuzz: 0)
        // Meteor's classic reconnect (a new session, everything sent again), as Meteor's transcripts and the reset
        // tests expect; resumption has its own tests (they turn it on).
        configuration.resumesSessions = false
        configure(&configuration)
        client = DDPClient(transport: transport, configuration: configuration)
    }

    /// Lets the client queue finish what it was handed.
    func settle() { client.waitUntilIdle() }

    /// connect → socket open → `connected`.
    func establishConnection(session: String = "SESSION-1") {
        client.connect()
        settle()
        transport.open()
        settle()
        receive(.connected(session: session))
    }

    /// The socket drops; after the first back-off (10 ms) the client opens a new one and sends `connect` and its
    /// re-sends (the record of earlier frames is cleared first). `connected` has not arrived yet.
    func dropAndReopen() {
        settle()
        transport.fail()
        settle()
        transport.clearSentFrames()
        advance(by: .milliseconds(10))
        transport.open()
        settle()
    }

    /// Whether a login's result is preceded by the logged-in user's document (`users/<id>`), as a Meteor server's
    /// accounts publication sends it (before Meteor 3; Meteor 3 sends it after the result, which tests that need that
    /// order script themselves with this off), and applied to the cache with the result. A login completes only once
    /// that document is in the cache.
    let publishesLoggedInUser: Bool

    /// The users whose document went out on the current session (`connected` starts a new one).
    private let usersPublished = Locked<Set<String>>([])

    func receive(_ message: ServerMessage) {
        if case .connected = message { usersPublished.mutate { $0 = [] } }
        if publishesLoggedInUser, case .result(_, let result?, nil) = message, result["token"] != nil,
            let userID = result["id"]?.stringValue, usersPublished.withLock({ $0.insert(userID).inserted })
        {
            transport.receive(.added(collection: "users", id: userID, fields: [:]))
            transport.receive(message)
            // Applied as the buffer's next tick would (the manual clock does not tick by itself).
            flushData()
            return
        }
        transport.receive(message)
        settle()
    }

    func receive(frame: String) {
        transport.receive(frame)
        settle()
    }

    /// Moves the manual clock and lets the client handle what fell due.
    func advance(by duration: Duration) {
        scheduler.advance(by: duration)
        settle()
    }

    var sent: [ClientMessage] { transport.sentMessages }

    /// Applies everything the client handed to its cache and waits until the resulting notifications were delivered.
    func flushData() {
        settle()
        client.updateBuffer.flush()
        client.database.notificationQueue.sync {}
        client.database.observerQueue.sync {}
        settle()
    }

    func document(_ collection: String, _ id: String) -> Document? {
        client.database.document(DocumentKey(collectionName: collection, documentID: id))
    }

    var status: ConnectionStatus.State { client.status.state }
}
