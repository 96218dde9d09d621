import EJSON
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A WebSocket server on 127.0.0.1 written byte by byte, so it can break every rule: it answers the handshake and
/// DDP's `connect`, then runs an *attack* on connection number ``attackedConnection`` (frames of any size, invalid
/// bytes, floods, half a frame, not reading), and otherwise behaves: it answers `connect`, `ping`, `sub` (with `ready`,
/// unless ``answersSubscriptionsAfterAttack`` is off) and `method` (with `result` and `updated`). The attack's end is
/// recorded, so a test can say how long the client took to answer a call again.
final class HostileWebSocketServer: Sendable {
    typealias Attack = @Sendable (HostileSocket) async throws -> Void

    /// Whether the server reads (and answers) the client while the attack runs.
    let readsDuringAttack: Bool
    /// Which connection (1 for the first) is attacked.
    let attackedConnection: Int
    /// Whether `sub` is answered with `ready` on the attacked connection.
    let answersSubscriptionsOnAttackedConnection: Bool
    /// Whether the attacked connection goes silent after the attack: open, never read, never answered (not even the
    /// client's close frame) until the client drops it.
    let silentAfterAttack: Bool
    private let attack: Attack
    private let state = NIOLockedValueBox(State())

    private struct State {
        var connections = 0
        var attackEnded: ContinuousClock.Instant?
        var attackEndWaiters: [CheckedContinuation<ContinuousClock.Instant, Never>] = []
        var serverChannel: (any Channel)?
        var acceptTask: Task<Void, Never>?
        var openConnections: [ObjectIdentifier: any Channel] = [:]
    }

    init(
        readsDuringAttack: Bool = true,
        attackedConnection: Int = 1,
        answersSubscriptionsOnAttackedConnection: Bool = true,
        silentAfterAttack: Bool = false,
        attack: @escaping Attack
    ) {
        self.readsDuringAttack = readsDuringAttack
        self.silentAfterAttack = silentAfterAttack
        self.attackedConnection = attackedConnection
        self.answersSubscriptionsOnAttackedConnection = answersSubscriptionsOnAttackedConnection
        self.attack = attack
    }

    /// When the attack's last byte was written (or the attack gave up); waits until it has.
    func attackEnd() async -> ContinuousClock.Instant {
        await withCheckedContinuation { continuation in
            let ended: ContinuousClock.Instant? = state.withLockedValue {
                if let ended = $0.attackEnded { return ended }
                $0.attackEndWaiters.append(continuation)
                return nil
            }
            if let ended { continuation.resume(returning: ended) }
        }
    }

    var connections: Int { state.withLockedValue { $0.connections } }

    /// Listens on an ephemeral port of 127.0.0.1 and returns it.
    func start() async throws -> Int {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        let port = server.channel.localAddress!.port!
        let task = Task<Void, Never> {
            _ = try? await server.executeThenClose { connections in
                try await withThrowingDiscardingTaskGroup { group in
                    for try await connection in connections {
                        group.addTask { try? await self.serve(connection) }
                    }
                }
            }
        }
        state.withLockedValue {
            $0.serverChannel = server.channel
            $0.acceptTask = task
        }
        return port
    }

    func stop() async {
        let (channel, task, open) = state.withLockedValue {
            ($0.serverChannel, $0.acceptTask, Array($0.openConnections.values))
        }
        try? await channel?.close()
        for connection in open { try? await connection.close() }
        task?.cancel()
    }

    private func serve(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>) async throws {
        let channel = connection.channel
        let attacked = state.withLockedValue {
            $0.connections += 1
            $0.openConnections[ObjectIdentifier(channel)] = channel
            return $0.connections == attackedConnection
        }
        defer { state.withLockedValue { _ = $0.openConnections.removeValue(forKey: ObjectIdentifier(channel)) } }
        try await connection.executeThenClose { inbound, outbound in
            var reader = ClientFrameReader(inbound.makeAsyncIterator())
            let key = try await reader.readHandshakeKey()
            let accept = Data(SHA1.digest(Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8)))
                .base64EncodedString()
            try await outbound.write(
                ByteBuffer(
                    string:
                        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        + "Sec-WebSocket-Accept: \(accept)\r\n\r\n"
                ))
            let socket = HostileSocket(outbound: outbound)
            guard case .text(let connect)? = try await reader.next(), connect.contains(#""connect""#) else { return }
            // A server before Meteor 3.5: every connection is a new session (its id never comes back).
            try await socket.sendText(#"{"msg":"connected","session":"hostile-\#(UUID().uuidString)"}"#)
            guard attacked else { return try await Self.behave(&reader, socket, answeringSubscriptions: true) }
            let answers = answersSubscriptionsOnAttackedConnection
            if readsDuringAttack {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        do { try await self.attack(socket) } catch {}
                        self.markAttackEnded()
                    }
                    try await Self.behave(&reader, socket, answeringSubscriptions: answers)
                    group.cancelAll()
                }
            } else {
                do { try await attack(socket) } catch {}
                markAttackEnded()
                if silentAfterAttack {
                    // Holds the socket open without reading until the client goes (its close ends the stream only
                    // once read, so wait on the channel) or the server stops.
                    try await channel.closeFuture.get()
                    return
                }
                try await Self.behave(&reader, socket, answeringSubscriptions: answers)
            }
        }
    }

    private func markAttackEnded() {
        let now = ContinuousClock.now
        let waiters = state.withLockedValue { state in
            state.attackEnded = now
            defer { state.attackEndWaiters = [] }
            return state.attackEndWaiters
        }
        for waiter in waiters { waiter.resume(returning: now) }
    }

    /// Answers like a minimal DDP server until the client closes.
    private static func behave(_ reader: inout ClientFrameReader, _ socket: HostileSocket, answeringSubscriptions: Bool)
        async throws
    {
        while let frame = try await reader.next() {
            guard case .text(let text) = frame, case .object(let message) = try? EJSON.parse(text) else { continue }
            let id = message["id"].map { EJSON.stringify($0) } ?? "null"
            switch message["msg"]?.stringValue {
            case "connect": try await socket.sendText(#"{"msg":"connected","session":"hostile-\#(UUID().uuidString)"}"#)
            case "ping":
                try await socket.sendText(message["id"] == nil ? #"{"msg":"pong"}"# : #"{"msg":"pong","id":\#(id)}"#)
            case "sub" where answeringSubscriptions: try await socket.sendText(#"{"msg":"ready","subs":[\#(id)]}"#)
            case "method":
                try await socket.sendText(#"{"msg":"result","id":\#(id),"result":"ok"}"#)
                try await socket.sendText(#"{"msg":"updated","methods":[\#(id)]}"#)
            default: break
            }
        }
    }
}

/// What an attack can write: whole frames, frame headers without their payload, or raw bytes.
struct HostileSocket: Sendable {
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>

    /// Writes one unmasked frame.
    func sendFrame(opcode: UInt8, fin: Bool = true, payload: some Collection<UInt8>) async throws {
        var buffer = ByteBuffer()
        Self.appendFrame(to: &buffer, opcode: opcode, fin: fin, payload: payload)
        try await outbound.write(buffer)
    }

    func sendText(_ text: String) async throws {
        try await sendFrame(opcode: 0x1, payload: Array(text.utf8))
    }

    /// Writes many text frames in one write.
    func sendTexts(_ texts: some Sequence<String>) async throws {
        var buffer = ByteBuffer()
        for text in texts { Self.appendFrame(to: &buffer, opcode: 0x1, fin: true, payload: Array(text.utf8)) }
        try await outbound.write(buffer)
    }

    /// Writes only a frame's header announcing `length` bytes of payload.
    func sendFrameHeader(opcode: UInt8, fin: Bool = true, length: Int) async throws {
        var buffer = ByteBuffer()
        Self.appendHeader(to: &buffer, opcode: opcode, fin: fin, length: length)
        try await outbound.write(buffer)
    }

    func sendRaw(_ bytes: some Sequence<UInt8>) async throws {
        try await outbound.write(ByteBuffer(bytes: bytes))
    }

    static func appendFrame(to buffer: inout ByteBuffer, opcode: UInt8, fin: Bool, payload: some Collection<UInt8>) {
        appendHeader(to: &buffer, opcode: opcode, fin: fin, length: payload.count)
        buffer.writeBytes(payload)
    }

    static func appendHeader(to buffer: inout ByteBuffer, opcode: UInt8, fin: Bool, length: Int) {
        buffer.writeInteger((fin ? 0x80 : 0) | opcode)
        if length < 126 {
            buffer.writeInteger(UInt8(length))
        } else if length <= 0xFFFF {
            buffer.writeInteger(UInt8(126))
            buffer.writeInteger(UInt16(length))
        } else {
            buffer.writeInteger(UInt8(127))
            buffer.writeInteger(UInt64(length))
        }
    }
}

/// Reads the client's side: the HTTP upgrade request, then masked frames (text messages only are assembled).
struct ClientFrameReader {
    enum Frame {
        case text(String)
        case other
    }

    private var iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    private var buffer = ByteBuffer()
    private var partial: [UInt8]?

    init(_ iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator) {
        self.iterator = iterator
    }

    private mutating func fill() async throws -> Bool {
        guard var more = try await iterator.next() else { return false }
        buffer.discardReadBytes()
        buffer.writeBuffer(&more)
        return true
    }

    mutating func readHandshakeKey() async throws -> String {
        while true {
            let view = buffer.readableBytesView
            if let end = view.firstRange(of: Array("\r\n\r\n".utf8)) {
                let request = String(decoding: view[..<end.upperBound], as: UTF8.self)
                buffer.moveReaderIndex(to: end.upperBound)
                for line in request.split(separator: "\r\n") where line.lowercased().hasPrefix("sec-websocket-key:") {
                    return line.dropFirst("sec-websocket-key:".count).trimmingCharacters(in: .whitespaces)
                }
                throw HostileServerError.badHandshake
            }
            guard try await fill() else { throw HostileServerError.closed }
        }
    }

    /// The next text message, `.other` for any other frame, `nil` once the client closes.
    mutating func next() async throws -> Frame? {
        while true {
            if let frame = takeFrame() {
                let (opcode, fin, payload) = frame
                switch opcode {
                case 0x8: return nil
                case 0x1, 0x0:
                    partial = (opcode == 0x0 ? partial ?? [] : []) + payload
                    if fin, let whole = partial {
                        partial = nil
                        return .text(String(decoding: whole, as: UTF8.self))
                    }
                default: return .other
                }
                continue
            }
            guard try await fill() else { return nil }
        }
    }

    private mutating func takeFrame() -> (UInt8, Bool, [UInt8])? {
        let bytes = buffer.readableBytesView
        guard bytes.count >= 2 else { return nil }
        var index = bytes.startIndex
        let first = bytes[index]
        let second = bytes[index + 1]
        index += 2
        var length = Int(second & 0x7F)
        if length == 126 {
            guard bytes.count >= 4 else { return nil }
            length = Int(bytes[index]) << 8 | Int(bytes[index + 1])
            index += 2
        } else if length == 127 {
            guard bytes.count >= 10 else { return nil }
            length = (0..<8).reduce(0) { $0 << 8 | Int(bytes[index + $1]) }
            index += 8
        }
        let masked = second & 0x80 != 0
        let maskStart = index
        if masked { index += 4 }
        guard bytes.endIndex - index >= length else { return nil }
        var payload = Array(bytes[index..<(index + length)])
        if masked {
            for i in payload.indices { payload[i] ^= bytes[maskStart + i % 4] }
        }
        buffer.moveReaderIndex(forwardBy: index + length - bytes.startIndex)
        return (first & 0x0F, first & 0x80 != 0, payload)
    }
}

enum HostileServerError: Error { case badHandshake, closed }
