import EJSON
import Foundation
import MeteorDDP
import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket

/// One WebSocket connection to the test server. It carries at most one DDP session, which a later connection may take
/// over when the client resumes it (Meteor 3.5+, ddp-semantics §13): the connection ends, the session may not.
///
/// Heartbeat bookkeeping is confined to the channel's event loop; ``session`` to the server queue. `write`/`close`
/// may be called from anywhere.
final class ServerConnection: @unchecked Sendable {
    // @unchecked because: heartbeat state is confined to `channel.eventLoop`; `session` to `server.queue`; `ending`
    // is protected by its lock.

    private weak let weakServer: DDPTestServer?
    let channel: any Channel

    /// The session this connection carries, once `connect` succeeded. Confined to the server queue.
    var session: ServerSession?
    /// How the connection is being ended by the server, if it is. Protected by its lock.
    private let ending = NIOLockedValueBox(Ending.notEnding)

    enum Ending {
        case notEnding
        /// Meteor's `connection.close()` (a kick): the session ends with the connection, never waiting to be resumed.
        case sessionEnds
        /// The network dropped (a test's doing): the session waits to be resumed, as after any lost socket.
        case severed
    }

    // MARK: - Mutable State (event loop)

    /// Whether a frame arrived since the last heartbeat tick. Confined to the event loop.
    private var seenFrame = false
    /// The pending heartbeat timeout. Confined to the event loop.
    private var heartbeatTimeout: Scheduled<Void>?
    /// The heartbeat tick. Confined to the event loop.
    private var heartbeatTick: RepeatedTask?

    init(server: DDPTestServer, channel: any Channel) {
        self.weakServer = server
        self.channel = channel
    }

    var server: DDPTestServer? { weakServer }

    func start() {
        weakServer?.register(self)
    }

    // MARK: - Receiving (event loop → server queue)

    func receive(_ text: String) {
        channel.eventLoop.preconditionInEventLoop()
        noteFrame()
        guard let server = weakServer else { return }
        let parsed: ClientMessage?
        do {
            parsed = try ClientMessage(ejson: EJSON.parse(text))
        } catch {
            parsed = nil
        }
        server.queue.async {
            guard let message = parsed else {
                let error = ServerMessage.error(reason: "Bad request", offendingMessage: try? EJSON.parse(text))
                // Within a session, counted as everything it sends.
                if let session = self.session { session.send(error) } else { self.reply(error) }
                return
            }
            server.record(message)
            if let session = self.session {
                session.handle(message, server: server)
            } else if case .connect(let offered, let receivedCount, let version, let support) = message {
                self.handleConnect(
                    offered: offered, receivedCount: receivedCount, version: version.rawValue,
                    support: support.map(\.rawValue), server: server)
            } else {
                self.reply(.error(reason: "Must connect first", offendingMessage: message.ejsonValue))
            }
        }
    }

    /// Meteor's `calculateVersion`: the first version in the client's `support` that the server speaks, else the
    /// server's first; a client proposing anything else gets `failed` with that version and is closed. Then the
    /// session `offered` is resumed if it waits in its grace period and `receivedCount` is exactly what it sent;
    /// otherwise a new session starts (and the one offered, if it waited, ends at once).
    private func handleConnect(
        offered: String?, receivedCount: Int?, version proposed: String, support: [String], server: DDPTestServer
    ) {
        let supported = server.configuration.supportedVersions
        let chosen = support.first(where: supported.contains) ?? supported[0]
        guard proposed == chosen, support.contains(proposed) else {
            reply(.failed(version: chosen))
            close()
            return
        }
        if let offered, let waiting = server.liveSessions[offered], waiting.isInGracePeriod {
            if let receivedCount, waiting.resume(on: self, receivedCount: receivedCount) {
                server.noteConnectOutcome(.resumed)
                startHeartbeat(version: proposed, server: server)
                return
            }
            server.noteConnectOutcome(receivedCount == nil ? .newSession : .refusedCountMismatch)
            waiting.end()
        } else {
            server.noteConnectOutcome(offered != nil && receivedCount != nil ? .refusedNotWaiting : .newSession)
        }
        let session = ServerSession(server: server, id: SecureRandomGenerator().id(), connection: self)
        self.session = session
        server.liveSessions[session.id] = session
        session.send(.connected(session: session.id))
        startHeartbeat(version: proposed, server: server)
        session.startUniversalPublications()
    }

    private func startHeartbeat(version: String, server: DDPTestServer) {
        guard version != "pre1", let interval = server.configuration.heartbeatInterval else { return }
        let timeout = server.configuration.heartbeatTimeout
        channel.eventLoop.execute {
            // A connection that closed meanwhile has already cancelled its (missing) tick.
            guard self.channel.isActive else { return }
            self.startHeartbeat(interval: interval, timeout: timeout)
        }
    }

    // MARK: - Writing

    /// A message outside any session (before `connect` succeeded): counted by no session.
    private func reply(_ message: ServerMessage) {
        write(EJSON.stringify(message.ejsonValue))
    }

    func write(_ text: String) {
        var buffer = channel.allocator.buffer(capacity: text.utf8.count)
        buffer.writeString(text)
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: buffer), promise: nil)
    }

    /// Writes several frames with one flush (so they leave in one TCP write where they fit).
    func write(_ texts: [String]) {
        guard !texts.isEmpty else { return }
        let channel = self.channel
        let frames = texts.map { text -> WebSocketFrame in
            var buffer = channel.allocator.buffer(capacity: text.utf8.count)
            buffer.writeString(text)
            return WebSocketFrame(fin: true, opcode: .text, data: buffer)
        }
        channel.eventLoop.execute {
            for frame in frames { channel.write(frame, promise: nil) }
            channel.flush()
        }
    }

    // MARK: - Heartbeat (event loop)

    private func noteFrame() {
        seenFrame = true
        heartbeatTimeout?.cancel()
        heartbeatTimeout = nil
    }

    private func startHeartbeat(interval: Duration, timeout: Duration) {
        heartbeatTick = channel.eventLoop.scheduleRepeatedTask(
            initialDelay: TimeAmount(interval), delay: TimeAmount(interval)
        ) { [weak self] _ in
            guard let self else { return }
            if !self.seenFrame && self.heartbeatTimeout == nil {
                // Not counted: pings and pongs never are.
                self.write(#"{"msg":"ping"}"#)
                // A heartbeat timeout loses the socket, not the session (Meteor: it waits to be resumed).
                self.heartbeatTimeout = self.channel.eventLoop.scheduleTask(in: TimeAmount(timeout)) { [weak self] in
                    self?.channel.close(promise: nil)
                }
            }
            self.seenFrame = false
        }
    }

    // MARK: - Ending

    /// Closes the connection as Meteor's `connection.close()` does: its session ends too.
    func close() {
        ending.withLockedValue { if case .notEnding = $0 { $0 = .sessionEnds } }
        // The session ends even if the socket was closing already (a network failure racing the kick): queued before
        // the close, so it runs before the server's handling of the lost connection, or after it on a session waiting
        // in its grace period.
        weakServer?.queue.async { self.session?.kicked(from: self) }
        channel.close(promise: nil)
    }

    /// Closes the socket as a network failure would: the session waits to be resumed.
    func sever() {
        ending.withLockedValue { if case .notEnding = $0 { $0 = .severed } }
        channel.close(promise: nil)
    }

    func closed() {
        channel.eventLoop.preconditionInEventLoop()
        heartbeatTick?.cancel()
        heartbeatTimeout?.cancel()
        guard let server = weakServer else { return }
        let endsSession: Bool = ending.withLockedValue { if case .sessionEnds = $0 { true } else { false } }
        // Before the unregistering: `waitUntilNoSession()` resumes behind it, once nothing of this connection can run.
        server.queue.async {
            // The session stays known to this connection: a kick racing the close still finds it.
            self.session?.connectionLost(self, endsSession: endsSession)
        }
        server.unregister(self)
    }
}

/// The NIO handler feeding WebSocket frames to a ``ServerConnection``.
final class ServerConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    let connection: ServerConnection

    init(connection: ServerConnection) {
        self.connection = connection
    }

    func handlerAdded(context: ChannelHandlerContext) {
        connection.start()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            var text = frame.unmaskedData
            connection.receive(text.readString(length: text.readableBytes) ?? "")
        case .ping:
            context.writeAndFlush(
                wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .connectionClose:
            var data = context.channel.allocator.buffer(capacity: 2)
            data.write(webSocketErrorCode: .normalClosure)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: data)))
                .whenComplete { _ in
                    channel.close(promise: nil)
                }
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        connection.closed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
