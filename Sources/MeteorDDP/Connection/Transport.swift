/// Something that carries DDP frames to a server and back: a WebSocket in production, an in-memory double in tests.
///
/// A transport makes one ``TransportConnection`` per connection attempt. The client keeps only the newest one and
/// ignores events from any older one, so an implementation never has to worry about late events.
///
/// # Implementation requirements
/// - `connect(onEvent:)` returns at once; the attempt proceeds in the background.
/// - Events for one connection arrive in order and never concurrently: at most one `.opened`, then any number of
///   `.text` / `.binary`, then exactly one `.closed` (also after ``TransportConnection/close()``), then nothing.
/// - `send(_:)` before `.opened` or after `.closed` drops the frame silently.
/// `InMemoryTransportTests` shows the contract as a test every transport must pass.
public protocol Transport: Sendable {
    /// Starts a connection attempt; `onEvent` receives its events on a thread of the transport's choosing.
    func connect(onEvent: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection
}

/// One connection attempt of a ``Transport``.
public protocol TransportConnection: AnyObject, Sendable {
    /// Sends one text frame. Frames are sent in call order.
    func send(_ frame: String)
    /// Closes the connection; a `.closed` event follows.
    func close()
    /// Closes the connection once the frames sent before are written (the last one says goodbye to the server); a
    /// `.closed` event follows. The default closes at once.
    func closeAfterSending()
    /// What the connection has carried on the wire so far, if it counts it (``WebSocketTransport``'s connections
    /// do); the default is `nil`. Read from the client's queue, at any time.
    var wireStatistics: TransportWireStatistics? { get }
}

extension TransportConnection {
    public func closeAfterSending() { close() }
    public var wireStatistics: TransportWireStatistics? { nil }
}

/// What a ``TransportConnection`` carried on the wire: the metrics' `meteor_ddp_wire_bytes_…` and the diagnostics'
/// compression.
public struct TransportWireStatistics: Sendable, Equatable {
    /// The WebSocket extension that compresses the frames (`"permessage-deflate"`), once the server accepted it;
    /// `nil`: the frames go as they are.
    public var compression: String?
    /// Frame payload bytes read off the wire (before inflating).
    public var bytesReceived: Int
    /// Frame payload bytes written to the wire (after deflating).
    public var bytesSent: Int

    public init(compression: String?, bytesReceived: Int, bytesSent: Int) {
        self.compression = compression
        self.bytesReceived = bytesReceived
        self.bytesSent = bytesSent
    }
}

/// What happened on a ``TransportConnection``.
public enum TransportEvent: Sendable {
    /// The connection is open; frames can be sent.
    case opened
    /// A text frame arrived.
    case text(String)
    /// A binary frame arrived (DDP does not use them; the client reports and ignores it).
    case binary(byteCount: Int)
    /// The connection ended, with the error that ended it, if any.
    case closed(TransportError?)
}

/// Why a transport connection ended or could not be made.
public struct TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure.
    public enum Kind: Sendable, Hashable {
        /// The connection could not be made (refused, unreachable, DNS, …).
        case connectFailed
        /// TLS failed (for example an untrusted certificate).
        case tlsFailed
        /// The server closed the WebSocket with an error code.
        case closedByServer(code: Int)
        /// A message larger than the configured limit arrived; the client closed the socket with code 1009.
        case messageTooLarge
        /// A text message was not valid UTF-8; the client closed the socket with code 1007.
        case invalidUTF8
        /// The server broke the WebSocket framing rules; the client closed the socket with code 1002.
        case protocolError
        /// The server stopped reading while the client had more to send than the configured limit
        /// (`WebSocketTransport.Configuration.maxBufferedOutboundBytes`); the client dropped the connection.
        case sendBufferFull
        /// The URL or the transport's configuration cannot be used (scheme, host, a `wss` IP literal without a TLS
        /// server name, an upgrade header whose name is not a valid HTTP field name).
        case invalidURL
        /// The server answered the WebSocket upgrade with this HTTP status instead of switching protocols (0: it
        /// gave none that could be read). Anything but a 5xx, 408 or 429 is permanent (``TransportError/isPermanent``):
        /// the client stops retrying, as a wrong URL does not get better (a 404 for a path without `/websocket`, a
        /// web page's 200, a redirect).
        case upgradeRefused(status: Int)
        /// Anything else.
        case other
    }

    /// The kind of failure.
    public let kind: Kind
    /// A description of the underlying error.
    public let message: String

    /// Creates an error.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The WebSocket close code of the close that ended the connection, if one is known: the server's for
    /// ``Kind/closedByServer(code:)``, the client's for ``Kind/messageTooLarge`` (1009), ``Kind/invalidUTF8`` (1007)
    /// and ``Kind/protocolError`` (1002).
    public var closeCode: Int? {
        switch kind {
        case .closedByServer(let code): code
        case .messageTooLarge: 1009
        case .invalidUTF8: 1007
        case .protocolError: 1002
        case .connectFailed, .tlsFailed, .invalidURL, .upgradeRefused, .sendBufferFull, .other: nil
        }
    }

    /// Whether trying again cannot help: a refused upgrade whose status says the URL is wrong (a page, a redirect, a
    /// client error), not that the server is busy (5xx, 408 Request Timeout, 429 Too Many Requests) and not an
    /// unknown status (0). The client's status becomes ``ConnectionStatus/State/failed``; ``DDPClient/reconnect()``
    /// tries again.
    public var isPermanent: Bool {
        guard case .upgradeRefused(let status) = kind else { return false }
        return (200..<500).contains(status) && status != 408 && status != 429
    }

    public var description: String { "transport error (\(kind)): \(message)" }
}
