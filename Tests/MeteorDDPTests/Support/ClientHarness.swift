import EJSON
import Foundation
import XCTest

@_spi(Testing) @testable import MeteorDDP

/// A client wired to an in-memory transport and a manual clock: every interleaving is chosen by the test.
final class ClientHarness: Sendable {
    let transport = InMemoryTransport()
    let scheduler = ManualScheduler()
    let client: DDPClient

    init(configure: (inout DDPClient.Configuration) -> Void = { _ in }) {
        var configuration = DDPClient.Configuration()
        configuration.scheduler = scheduler
        configuration.retryStrategy = RetryStrategy(fuzz: 0)
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

    func receive(_ message: ServerMessage) {
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
