import EJSON
import Foundation
import MeteorDDP
import NIOCore
import NIOWebSocket

/// One client's DDP session on the test server: handshake, heartbeats, and the session's messages.
///
/// All mutable state is confined to the channel's event loop; `send`/`close` may be called from anywhere.
final class ServerSession: @unchecked Sendable {
    // @unchecked because every mutable property is confined to `channel.eventLoop` (checked with preconditionInEventLoop).

    private weak let weakServer: DDPTestServer?
    let channel: any Channel

    // MARK: - Mutable State (confined to channel.eventLoop)

    /// The DDP session id once `connect` succeeded. Confined to the event loop.
    private(set) var sessionID: String?
    /// The negotiated version. Confined to the event loop.
    private(set) var version: String?
    /// Whether a frame arrived since the last heartbeat tick. Confined to the event loop.
    private var seenFrame = false
    /// The pending heartbeat timeout, if a ping is outstanding. Confined to the event loop.
    private var heartbeatTimeout: Scheduled<Void>?
    /// The heartbeat tick. Confined to the event loop.
    private var heartbeatTick: RepeatedTask?

    init(server: DDPTestServer, channel: any Channel) {
        self.weakServer = server
        self.channel = channel
    }

    // MARK: - Starting

    func start() {
        channel.eventLoop.preconditionInEventLoop()
        weakServer?.register(self)
    }

    // MARK: - Receiving

    func receive(_ text: String) {
        channel.eventLoop.preconditionInEventLoop()
        guard let server = weakServer else { return }
        noteFrame()
        let message: ClientMessage
        do {
            message = try ClientMessage(ejson: EJSON.parse(text))
        } catch {
            send(.error(reason: "Bad request", offendingMessage: try? EJSON.parse(text)))
            return
        }
        server.record(message)
        guard sessionID != nil else {
            if case .connect(_, let version, let support) = message {
                handleConnect(version: version.rawValue, support: support.map(\.rawValue))
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
        case .sub(let id, let name, _):
            send(.nosub(id: id, error: MeteorError(error: .number(404), reason: "Subscription '\(name)' not found")))
        case .unsub(let id):
            send(.nosub(id: id, error: nil))
        case .method(let id, let method, _, _):
            send(.result(id: id, result: nil, error: MeteorError(error: .number(404), reason: "Method '\(method)' not found")))
        }
    }

    /// Meteor's `calculateVersion`: the first version in the client's `support` that the server speaks, else the
    /// server's first; a client proposing anything else gets `failed` with that version and is closed.
    private func handleConnect(version proposed: String, support: [String]) {
        guard let server = weakServer else { return }
        let supported = server.configuration.supportedVersions
        let chosen = support.first(where: supported.contains) ?? supported[0]
        guard proposed == chosen, support.contains(proposed) else {
            send(.failed(version: chosen))
            close()
            return
        }
        let session = ServerSession.makeSessionID()
        sessionID = session
        version = proposed
        send(.connected(session: session))
        if proposed != "pre1", let interval = server.configuration.heartbeatInterval {
            startHeartbeat(interval: interval)
        }
    }

    // MARK: - Sending

    func send(_ message: ServerMessage) {
        sendRaw(EJSON.stringify(message.ejsonValue))
    }

    func sendRaw(_ text: String) {
        let channel = self.channel
        channel.eventLoop.execute {
            var buffer = channel.allocator.buffer(capacity: text.utf8.count)
            buffer.writeString(text)
            channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: buffer), promise: nil)
        }
    }

    // MARK: - Heartbeat (LS: ping after silence, close when unanswered)

    private func noteFrame() {
        seenFrame = true
        heartbeatTimeout?.cancel()
        heartbeatTimeout = nil
    }

    private func startHeartbeat(interval: Duration) {
        guard let server = weakServer else { return }
        let timeout = TimeAmount(server.configuration.heartbeatTimeout)
        heartbeatTick = channel.eventLoop.scheduleRepeatedTask(initialDelay: TimeAmount(interval), delay: TimeAmount(interval)) { [weak self] _ in
            guard let self else { return }
            if !self.seenFrame && self.heartbeatTimeout == nil {
                self.send(.ping(id: nil))
                self.heartbeatTimeout = self.channel.eventLoop.scheduleTask(in: timeout) { [weak self] in
                    self?.close()
                }
            }
            self.seenFrame = false
        }
    }

    // MARK: - Ending

    func close() {
        let channel = self.channel
        channel.eventLoop.execute {
            channel.close(promise: nil)
        }
    }

    func closed() {
        channel.eventLoop.preconditionInEventLoop()
        heartbeatTick?.cancel()
        heartbeatTimeout?.cancel()
        weakServer?.unregister(self)
    }

    static func makeSessionID() -> String {
        let alphabet = Array("23456789ABCDEFGHJKLMNPQRSTWXYZabcdefghijkmnopqrstuvwxyz")
        var generator = SystemRandomNumberGenerator()
        return String((0..<17).map { _ in alphabet.randomElement(using: &generator)! })
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
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            var data = context.channel.allocator.buffer(capacity: 2)
            data.write(webSocketErrorCode: .normalClosure)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: data))).whenComplete { _ in
                channel.close(promise: nil)
            }
        case .binary, .pong, .continuation:
            break
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
