import EJSON
import MeteorDDP
import NIOConcurrencyHelpers

/// A ``Transport`` double for tests: records what the client sends and lets a test inject what the server says.
///
/// Events are delivered synchronously on the calling thread, so a test controls every interleaving. The client hands
/// what it receives to its own queue (the transport's thread never runs the client's work): call
/// `client.waitUntilIdle()` before asserting what a frame led to.
/// For example:
/// ```swift
/// let transport = InMemoryTransport()
/// var configuration = DDPClient.Configuration()
/// configuration.scheduler = ManualScheduler()                 // timers move only when the test says so
/// let client = DDPClient(transport: transport, configuration: configuration)
/// client.connect()
/// await transport.waitUntilConnecting()
/// transport.open()                                        // the socket opens; the client sends `connect`
/// await transport.waitUntilSent { !$0.isEmpty }
/// XCTAssertEqual(transport.sentMessages.first?.name, "connect")
/// transport.receive(#"{"msg":"connected","session":"s1"}"#)
/// ```
public final class InMemoryTransport: Transport, @unchecked Sendable {
    // @unchecked because all mutable state is in `state`, protected by its lock.

    // MARK: - Mutable State

    private struct State {
        /// Protected by `state`'s lock.
        var connections: [Connection] = []
        /// Every frame sent on any connection, in order. Protected by `state`'s lock.
        var sentFrames: [String] = []
        /// Tasks waiting for sent frames. Protected by `state`'s lock.
        var waiters: [(predicate: @Sendable ([String]) -> Bool, continuation: CheckedContinuation<Void, Never>)] = []
        /// Tasks waiting for connection attempts. Protected by `state`'s lock.
        var connectionWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = NIOLockedValueBox(State())

    /// Creates a transport with no connections yet.
    public init() {}

    public func connect(onEvent: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
        let connection = Connection(transport: self, onEvent: onEvent)
        let ready: [CheckedContinuation<Void, Never>] = state.withLockedValue { state in
            state.connections.append(connection)
            let count = state.connections.count
            let ready = state.connectionWaiters.filter { $0.count <= count }.map(\.continuation)
            state.connectionWaiters.removeAll { $0.count <= count }
            return ready
        }
        for continuation in ready { continuation.resume() }
        return connection
    }

    // MARK: - Observing

    /// How many connection attempts the client has made.
    public var connectionAttempts: Int { state.withLockedValue { $0.connections.count } }

    /// Every frame the client sent, over all connections.
    public var sentFrames: [String] { state.withLockedValue { $0.sentFrames } }

    /// Every frame the client sent, decoded; undecodable frames are skipped.
    public var sentMessages: [ClientMessage] {
        sentFrames.compactMap { try? ClientMessage(ejson: EJSON.parse($0)) }
    }

    /// Forgets the frames recorded so far.
    public func clearSentFrames() { state.withLockedValue { $0.sentFrames.removeAll() } }

    /// Whether the newest connection is open.
    public var isOpen: Bool { current?.isOpen ?? false }

    /// Whether the newest connection was closed by the client.
    public var closedByClient: Bool { current?.wasClosedByClient ?? false }

    private var current: Connection? { state.withLockedValue { $0.connections.last } }

    // MARK: - Driving the newest connection

    /// Opens the newest connection (the server accepted the socket).
    public func open() { current?.deliver(.opened) }

    /// Delivers a text frame from the server on the newest connection.
    public func receive(_ frame: String) { current?.deliver(.text(frame)) }

    /// Delivers a server message on the newest connection.
    public func receive(_ message: ServerMessage) { receive(EJSON.stringify(message.ejsonValue)) }

    /// Delivers a binary frame on the newest connection.
    public func receiveBinary(byteCount: Int) { current?.deliver(.binary(byteCount: byteCount)) }

    /// Ends the newest connection from the server side (or with a network error).
    public func fail(_ error: TransportError? = TransportError(.other, "connection lost")) {
        current?.deliver(.closed(error))
    }

    /// Returns once the client has made at least `count` connection attempts (after `DDPClient.connect()`, which
    /// opens its connection on the client's queue a moment later; no polling).
    public func waitUntilConnecting(attempts count: Int = 1) async {
        await withCheckedContinuation { continuation in
            let satisfied: Bool = state.withLockedValue { state in
                if state.connections.count >= count { return true }
                state.connectionWaiters.append((count, continuation))
                return false
            }
            if satisfied { continuation.resume() }
        }
    }

    /// Returns once the frames sent so far satisfy `predicate` (checked after every send; no polling).
    public func waitUntilSent(_ predicate: @escaping @Sendable ([String]) -> Bool) async {
        await withCheckedContinuation { continuation in
            let satisfied: Bool = state.withLockedValue { state in
                if predicate(state.sentFrames) { return true }
                state.waiters.append((predicate, continuation))
                return false
            }
            if satisfied { continuation.resume() }
        }
    }

    /// Returns once at least `count` sent frames decode to messages matching `predicate`.
    public func waitUntilSent(count: Int, where predicate: @escaping @Sendable (ClientMessage) -> Bool) async {
        await waitUntilSent { frames in
            frames.lazy.compactMap { try? ClientMessage(ejson: EJSON.parse($0)) }.filter(predicate).count >= count
        }
    }

    fileprivate func record(_ frame: String) {
        let ready: [CheckedContinuation<Void, Never>] = state.withLockedValue { state in
            state.sentFrames.append(frame)
            var ready: [CheckedContinuation<Void, Never>] = []
            state.waiters.removeAll { waiter in
                guard waiter.predicate(state.sentFrames) else { return false }
                ready.append(waiter.continuation)
                return true
            }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// One connection attempt of an ``InMemoryTransport``.
    final class Connection: TransportConnection, @unchecked Sendable {
        // @unchecked because `phase` is protected by `lock`.
        private enum Phase { case pending, open, closed }
        private let lock = NIOLock()
        /// Protected by `lock`.
        private var phase = Phase.pending
        /// Protected by `lock`.
        private(set) var wasClosedByClient = false
        private weak var transport: InMemoryTransport?
        private let onEvent: @Sendable (TransportEvent) -> Void

        init(transport: InMemoryTransport, onEvent: @escaping @Sendable (TransportEvent) -> Void) {
            self.transport = transport
            self.onEvent = onEvent
        }

        var isOpen: Bool { lock.withLock { phase == .open } }

        func deliver(_ event: TransportEvent) {
            let deliver: Bool = lock.withLock {
                switch (phase, event) {
                case (.closed, _): return false
                case (.pending, .opened):
                    phase = .open
                    return true
                case (.open, .opened): return false
                case (_, .closed):
                    phase = .closed
                    return true
                case (.open, _): return true
                case (.pending, _): return false
                }
            }
            if deliver { onEvent(event) }
        }

        func send(_ frame: String) {
            guard isOpen else { return }
            transport?.record(frame)
        }

        func close() {
            let wasLive: Bool = lock.withLock {
                guard phase != .closed else { return false }
                phase = .closed
                wasClosedByClient = true
                return true
            }
            if wasLive { onEvent(.closed(nil)) }
        }
    }
}
