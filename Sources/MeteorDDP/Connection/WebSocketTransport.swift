import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import NIOWebSocket
import WSClient
import WSCompression

/// The production ``Transport``: a WebSocket over SwiftNIO (swift-websocket), `ws://` or `wss://`.
///
/// Secure by default: `wss` verifies the server's certificate chain and host name against the system trust roots.
/// permessage-deflate is offered, and frame and message limits are far above swift-websocket's 16 KiB default
/// (a larger message would otherwise fail with close code 1009).
/// For example:
/// ```swift
/// import NIOSSL
///
/// var webSocket = WebSocketTransport.Configuration()
/// webSocket.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile("dev-ca.pem"))
/// let client = DDPClient(url: URL(string: "wss://dev.local:3000/websocket")!, webSocket: webSocket)
/// ```
public struct WebSocketTransport: Transport {
    /// WebSocket and TLS settings.
    public struct Configuration: Sendable {
        /// Largest single frame accepted or sent, in bytes. Default 16 MiB.
        public var maxFrameSize: Int = 16 << 20
        /// Largest message (all frames of one message) accepted, in bytes. Default 64 MiB.
        public var maxMessageSize: Int = 64 << 20
        /// Whether permessage-deflate is offered. Default `true` (Meteor servers enable it).
        public var compression = true
        /// Largest decompressed frame accepted with permessage-deflate. Default 64 MiB.
        public var maxDecompressedFrameSize: Int = 64 << 20
        /// Most bytes of frames waiting to be written. Default 8 MiB. A server that stops reading while the client
        /// has more to send (for example pongs for a flood of pings) makes the connection fail with
        /// ``TransportError/Kind/sendBufferFull`` rather than let the queue grow; the client reconnects.
        public var maxBufferedOutboundBytes: Int = 8 << 20
        /// How long a close handshake may wait for the server's close frame before the socket is dropped.
        /// Default 2 s. The client reports the connection closed at once either way.
        public var closeTimeout: Duration = .seconds(2)
        /// Extra trust roots for `wss` (for example a development CA); `nil` uses the system's.
        public var trustRoots: NIOSSLTrustRoots?
        /// A complete TLS configuration, overriding ``trustRoots``; verification stays on unless you turn it off here.
        public var tlsConfiguration: TLSConfiguration?
        /// The host name for SNI and certificate verification. Required for `wss` to an IP literal
        /// (SNI cannot carry an IP address), for example `"localhost"` when the certificate names localhost.
        public var tlsServerName: String?
        /// The event loop group; default the shared singleton. A group of your own must outlive the client: the
        /// connection's tasks run on one of its loops.
        public var eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
        /// Extra headers for the WebSocket upgrade request, by HTTP field name: an `Authorization` or `Cookie` for an
        /// authenticating proxy in front of the server, a `User-Agent`. Their values never appear in the client's
        /// logs. A name that is not a valid HTTP field name fails each connection attempt with
        /// ``TransportError/Kind/invalidURL``.
        public var upgradeHeaders: [String: String] = [:]
        /// A proxy to reach the server through; `nil` (the default) connects directly.
        public var proxy: Proxy?

        /// A proxy between the client and the server.
        public struct Proxy: Sendable {
            enum Kind: Sendable {
                case http(host: String, port: Int, headers: [String: String])
                case socks(host: String, port: Int)
                case environment
            }

            let kind: Kind

            /// An HTTP proxy, through `CONNECT`; `headers` go with the `CONNECT` request (a `Proxy-Authorization`:
            /// never logged either).
            public static func http(host: String, port: Int, headers: [String: String] = [:]) -> Proxy {
                Proxy(kind: .http(host: host, port: port, headers: headers))
            }

            /// A SOCKS5 proxy (no authentication).
            public static func socks(host: String, port: Int) -> Proxy {
                Proxy(kind: .socks(host: host, port: port))
            }

            /// The HTTP proxy the environment names, as swift-websocket reads it: `http_proxy` for `ws`;
            /// `https_proxy`, `HTTPS_PROXY` or `http_proxy` for `wss`; none for a host `no_proxy` names. Credentials
            /// in the variable are not used.
            public static let environment = Proxy(kind: .environment)
        }

        /// Creates the default configuration.
        public init() {}
    }

    let url: URL
    let configuration: Configuration
    let logger: Logger

    /// Creates a transport for `url` (`ws://…/websocket` or `wss://…/websocket`).
    public init(
        url: URL, configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "MeteorDDP", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.url = url
        self.configuration = configuration
        self.logger = logger
    }

    public func connect(onEvent: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
        connect(readGate: nil, onEvent: onEvent)
    }
}

extension WebSocketTransport: GatedReadTransport {
    func connect(readGate: ReadGate?, onEvent: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection
    {
        let connection = WebSocketConnection(
            maxBufferedOutboundBytes: configuration.maxBufferedOutboundBytes, readGate: readGate, onEvent: onEvent)
        connection.start(url: url, configuration: configuration, logger: logger)
        return connection
    }
}

extension String {
    /// Whether this is an IPv4 or IPv6 address literal (SNI cannot carry one).
    var isIPAddressLiteral: Bool {
        if contains(":") { return true }
        let parts = split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { UInt8($0) != nil }
    }
}
