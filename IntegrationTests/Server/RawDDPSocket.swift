import EJSON
import Foundation
import MeteorDDP

/// A bare DDP socket for server tests, over the library's WebSocket transport: sends frames as written, reads every
/// frame the server sends, and counts them as Meteor's client does (every message but `ping` and `pong`).
final class RawDDPSocket: @unchecked Sendable {
    // @unchecked because: `connection` is set once in `init`; the stream is thread-safe.
    private let events: UncheckedBox<AsyncStream<TransportEvent>.AsyncIterator>
    private var connection: (any TransportConnection)!
    /// Messages received so far, pings and pongs aside.
    private(set) var receivedCount = 0

    init(url: URL) async throws {
        let (events, continuation) = AsyncStream<TransportEvent>.makeStream()
        self.events = UncheckedBox(events.makeAsyncIterator())
        connection = WebSocketTransport(url: url).connect { event in continuation.yield(event) }
        guard case .opened = try await nextEvent("the socket to open") else {
            throw TimedOut(what: "the socket to open (it closed)")
        }
    }

    func send(_ frame: String) { connection.send(frame) }

    func send(_ message: ClientMessage) { send(EJSON.stringify(message.ejsonValue)) }

    /// `connect` proposing version 1, offering `session` with `receivedCount` (nil: none).
    func connect(resuming session: String? = nil, receivedCount: Int? = nil) {
        send(.connect(session: session, receivedCount: receivedCount, version: .v1, support: [.v1]))
    }

    /// The next message, counted; a `ping` or `pong` is returned too, not counted.
    func next(_ what: String = "a message") async throws -> ServerMessage {
        guard case .text(let text) = try await nextEvent(what) else { throw TimedOut(what: what + " (socket closed)") }
        let message = try ServerMessage(ejson: EJSON.parse(text))
        switch message {
        case .ping, .pong: break
        default: receivedCount += 1
        }
        return message
    }

    /// Reads messages until one matches; returns it and those before it.
    func next(until what: String, _ predicate: (ServerMessage) -> Bool) async throws -> [ServerMessage] {
        var seen: [ServerMessage] = []
        while true {
            let message = try await next(what)
            seen.append(message)
            if predicate(message) { return seen }
        }
    }

    /// Waits until the server closes the socket.
    func waitUntilClosed() async throws {
        while true {
            if case .closed = try await nextEvent("the socket to close") { return }
        }
    }

    func close() { connection.close() }

    private func nextEvent(_ what: String) async throws -> TransportEvent {
        let events = self.events
        guard let event = try await withTimeout(10, what, { await events.value.next() }) else {
            throw TimedOut(what: what + " (no more events)")
        }
        return event
    }
}

private final class UncheckedBox<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}
