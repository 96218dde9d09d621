import EJSON
import Foundation
import MeteorDDP
import NIOCore
import NIOWebSocket

/// One client's DDP session on the test server.
///
/// Heartbeat bookkeeping is confined to the channel's event loop; everything DDP (handshake, subscriptions, the merge
/// box, methods) is confined to the server queue. `send`/`close` may be called from anywhere.
final class ServerSession: @unchecked Sendable {
    // @unchecked because: heartbeat state is confined to `channel.eventLoop`; DDP state to `server.queue`.

    private weak let weakServer: DDPTestServer?
    let channel: any Channel

    // MARK: - Mutable State (server queue)

    /// The DDP session id once `connect` succeeded. Confined to the server queue.
    private(set) var sessionID: String?
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
    /// Whether the connection closed: what is still in the inbox, or waiting out a latency, is dropped (Meteor's
    /// closed session drops its `inQueue`). Confined to the server queue.
    var ended = false
    /// While a method runs: the data messages it caused for this session, held for the write fence. Confined to the
    /// server queue.
    var fence: [ServerMessage]?

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

    // MARK: - Starting

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
                self.send(.error(reason: "Bad request", offendingMessage: try? EJSON.parse(text)))
                return
            }
            server.record(message)
            self.handle(message, server: server)
        }
    }

    private func handle(_ message: ClientMessage, server: DDPTestServer) {
        guard sessionID != nil else {
            if case .connect(_, let version, let support) = message {
                handleConnect(version: version.rawValue, support: support.map(\.rawValue), server: server)
            } else {
                send(.error(reason: "Must connect first", offendingMessage: message.ejsonValue))
            }
            return
        }
        switch message {
        case .connect:
            send(.error(reason: "Already connected", offendingMessage: message.ejsonValue))
        case .ping(let id):
            if server.respondsToPings { send(.pong(id: id)) }
        case .pong:
            break
        case .sub, .unsub, .method:
            inbox.append(message)
            processInbox()
        }
    }

    /// Meteor's `calculateVersion`: the first version in the client's `support` that the server speaks, else the
    /// server's first; a client proposing anything else gets `failed` with that version and is closed.
    private func handleConnect(version proposed: String, support: [String], server: DDPTestServer) {
        let supported = server.configuration.supportedVersions
        let chosen = support.first(where: supported.contains) ?? supported[0]
        guard proposed == chosen, support.contains(proposed) else {
            send(.failed(version: chosen))
            close()
            return
        }
        let session = SecureRandomGenerator().id()
        sessionID = session
        send(.connected(session: session))
        if proposed != "pre1", let interval = server.configuration.heartbeatInterval {
            channel.eventLoop.execute {
                self.startHeartbeat(interval: interval, timeout: server.configuration.heartbeatTimeout)
            }
        }
        startUniversalPublications()
    }

    // MARK: - Sending

    /// Sends a data message, unless a method's write fence holds this session's data.
    func sendData(_ message: ServerMessage) {
        if fence != nil { fence!.append(message) } else { send(message) }
    }

    func send(_ message: ServerMessage) {
        sendRaw(EJSON.stringify(message.ejsonValue))
    }

    func sendRaw(_ text: String) {
        let channel = self.channel
        var buffer = channel.allocator.buffer(capacity: text.utf8.count)
        buffer.writeString(text)
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: buffer), promise: nil)
    }

    /// Sends several messages with one flush (so they leave in one TCP write where they fit).
    func send(_ messages: [ServerMessage]) {
        guard !messages.isEmpty else { return }
        let channel = self.channel
        let frames = messages.map { message -> WebSocketFrame in
            let text = EJSON.stringify(message.ejsonValue)
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
                self.sendRaw(#"{"msg":"ping"}"#)
                self.heartbeatTimeout = self.channel.eventLoop.scheduleTask(in: TimeAmount(timeout)) { [weak self] in
                    self?.close()
                }
            }
            self.seenFrame = false
        }
    }

    // MARK: - Ending

    func close() {
        channel.close(promise: nil)
    }

    func closed() {
        channel.eventLoop.preconditionInEventLoop()
        heartbeatTick?.cancel()
        heartbeatTimeout?.cancel()
        guard let server = weakServer else { return }
        // Before the unregistering: `waitUntilNoSession()` resumes behind it, once nothing of this session can run.
        server.queue.async {
            self.ended = true
            self.inbox.removeAll()
            self.stopAllSubscriptions()
        }
        server.unregister(self)
    }
}

/// The NIO handler feeding WebSocket frames to a ``ServerSession``.
final class ServerSessionHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    let session: ServerSession

    init(session: ServerSession) {
        self.session = session
    }

    func handlerAdded(context: ChannelHandlerContext) {
        session.start()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            var text = frame.unmaskedData
            session.receive(text.readString(length: text.readableBytes) ?? "")
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
        session.closed()
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
