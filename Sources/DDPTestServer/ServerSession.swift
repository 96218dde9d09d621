import EJSON
import Foundation
import MeteorDDP

/// One client's DDP session on the test server, carried by a ``ServerConnection`` (or by none, during its grace period:
/// Meteor 3.5+ keeps a session whose socket was lost for `disconnectGracePeriod`, queueing what it would send, so the
/// client can resume it on a new socket; ddp-semantics §13).
///
/// Everything DDP (subscriptions, the merge box, methods, what it sent and queued) is confined to the server queue.
final class ServerSession: @unchecked Sendable {
    // @unchecked because: its state is confined to `server.queue`.

    private weak let weakServer: DDPTestServer?
    /// The DDP session id.
    let id: String

    // MARK: - Mutable State (server queue)

    /// The connection carrying the session; `nil` in its grace period. Confined to the server queue.
    private(set) var connection: ServerConnection?
    /// Messages written to a connection so far, pings and pongs aside (Meteor's `sentCount`; `connected` is the
    /// first). A message written into a socket that is dying counts too, though it never arrives: the client's count
    /// then differs, and it gets a new session. Confined to the server queue.
    private(set) var sentCount = 0
    /// In the grace period: what the session would have written, in order, with whether each counts. Confined to the
    /// server queue.
    private var queued: [(text: String, counted: Bool)] = []
    /// In the grace period: its end. Confined to the server queue.
    private var graceEnd: DispatchWorkItem?
    /// Whether the client said `disconnect`: the session ends with its socket. Confined to the server queue.
    private var expectingDisconnect = false
    /// Whether the server kicked the session (Meteor's `connection.close()`): it ends with its socket. Confined to the
    /// server queue.
    private var kicked = false
    /// The connection last lost, during the grace period. Confined to the server queue.
    private weak var lostConnection: ServerConnection?
    /// The logged-in user. Confined to the server queue.
    var userID: String?
    /// The resume token of the current login. Confined to the server queue.
    var loginToken: String?
    /// Live subscriptions by id. Confined to the server queue.
    var subscriptions: [String: SubscriptionRecord] = [:]
    /// The session's merge box. Confined to the server queue.
    var mergeBox = MergeBox()
    /// Client messages waiting for the previous method to finish. Confined to the server queue.
    var inbox: [ClientMessage] = []
    /// Whether a (slow) method is running. Confined to the server queue.
    var busy = false
    /// Whether the session ended: what is still in the inbox, or waiting out a latency, is dropped (Meteor's
    /// closed session drops its `inQueue`). Confined to the server queue.
    private(set) var ended = false
    /// While a method runs: the data messages it caused for this session, held for the write fence. Confined to the
    /// server queue.
    var fence: [ServerMessage]?

    init(server: DDPTestServer, id: String, connection: ServerConnection) {
        self.weakServer = server
        self.id = id
        self.connection = connection
    }

    var server: DDPTestServer? { weakServer }

    /// The session id (for the session's own code, which used to learn it at `connect`).
    var sessionID: String? { id }

    // MARK: - Receiving (server queue)

    func handle(_ message: ClientMessage, server: DDPTestServer) {
        switch message {
        case .connect:
            send(.error(reason: "Already connected", offendingMessage: message.ejsonValue))
        case .ping(let id):
            if server.respondsToPings { send(.pong(id: id)) }
        case .pong:
            break
        case .disconnect:
            // Ahead of the queue, as Meteor's server takes it.
            expectingDisconnect = true
        case .sub, .unsub, .method:
            inbox.append(message)
            processInbox()
        }
    }

    // MARK: - Sending (server queue)

    /// Sends a data message, unless a method's write fence holds this session's data.
    func sendData(_ message: ServerMessage) {
        if fence != nil { fence!.append(message) } else { send(message) }
    }

    func send(_ message: ServerMessage) {
        transmit(EJSON.stringify(message.ejsonValue), counted: message.isCounted)
    }

    func sendRaw(_ text: String) {
        transmit(text, counted: true)
    }

    /// Sends several messages with one flush (so they leave in one TCP write where they fit).
    func send(_ messages: [ServerMessage]) {
        guard !messages.isEmpty, !ended else { return }
        guard let connection else {
            for message in messages { send(message) }
            return
        }
        sentCount += messages.count { $0.isCounted }
        connection.write(messages.map { EJSON.stringify($0.ejsonValue) })
    }

    private func transmit(_ text: String, counted: Bool) {
        guard !ended else { return }
        if let connection {
            if counted { sentCount += 1 }
            connection.write(text)
            return
        }
        queued.append((text, counted))
        // Meteor's `maxMessageQueueLength`: one more than it holds, and the session ends at once.
        if let server, queued.count > server.configuration.maxMessageQueueLength {
            server.noteGracePeriodOverflow()
            end()
        }
    }

    // MARK: - Losing and resuming the connection (server queue)

    /// Whether the session waits for the client to resume it.
    var isInGracePeriod: Bool { connection == nil && !ended }

    /// The connection carrying the session closed. The session waits `disconnectGracePeriod` for the client to resume
    /// it, unless the server closed the connection (`endsSession`), the client said `disconnect`, or there is no
    /// grace period.
    func connectionLost(_ lost: ServerConnection, endsSession: Bool) {
        guard connection === lost, !ended else { return }
        connection = nil
        lostConnection = lost
        let endsWithItsSocket = endsSession || kicked || expectingDisconnect
        guard let server, !endsWithItsSocket, server.configuration.disconnectGracePeriod > .zero else {
            return end()
        }
        let end = DispatchWorkItem { [weak self] in self?.end() }
        graceEnd = end
        server.queue.asyncAfter(
            deadline: .now() + Self.interval(server.configuration.disconnectGracePeriod), execute: end)
    }

    /// Takes the session over on `connection` if `receivedCount` is exactly what it sent: `connected` with the same id,
    /// then what it queued, in order. Returns whether it did.
    func resume(on connection: ServerConnection, receivedCount: Int) -> Bool {
        guard isInGracePeriod, receivedCount == sentCount, !expectingDisconnect else { return false }
        graceEnd?.cancel()
        graceEnd = nil
        lostConnection = nil
        self.connection = connection
        connection.session = self
        send(.connected(session: id))
        let waiting = queued
        queued = []
        sentCount += waiting.count { $0.counted }
        connection.write(waiting.map(\.text))
        return true
    }

    /// Ends the session: its inbox is dropped, its subscriptions stop, nothing more is sent.
    func end() {
        guard !ended else { return }
        ended = true
        graceEnd?.cancel()
        graceEnd = nil
        queued = []
        inbox.removeAll()
        stopAllSubscriptions()
        if let server, server.liveSessions[id] === self { server.liveSessions.removeValue(forKey: id) }
        server?.sessionBecameIdle()
    }

    /// The server closes `connection` (Meteor's `connection.close()`): the session ends with it, or now if it lost
    /// that connection already and waits in its grace period (the kick raced a socket closing on its own).
    func kicked(from kickedConnection: ServerConnection) {
        guard !ended else { return }
        if connection === kickedConnection {
            kicked = true
        } else if connection == nil, lostConnection === kickedConnection {
            end()
        }
    }

    /// Closes the session's connection as Meteor's `connection.close()` does (a kick): the session ends with it.
    func close() {
        guard let connection else { return end() }
        connection.close()
    }
}

extension ServerMessage {
    /// Whether a session counts the message as sent: every message but `ping` and `pong`.
    var isCounted: Bool {
        switch self {
        case .ping, .pong: false
        default: true
        }
    }
}
