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

        /// Creates the default configuration.
        public init() {}
    }

    let url: URL
    let configuration: Configuration
    let logger: Logger

    /// Creates a transport for `url` (`ws://…/websocket` or `wss://…/websocket`).
    public init(url: URL, configuration: Configuration = Configuration(), logger: Logger = Logger(label: "MeteorDDP", factory: { _ in SwiftLogNoOpLogHandler() })) {
        self.url = url
        self.configuration = configuration
        self.logger = logger
    }

    public func connect(onEvent: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
        let connection = WebSocketConnection(onEvent: onEvent)
        connection.start(url: url, configuration: configuration, logger: logger)
        return connection
    }
}

/// One WebSocket connection attempt: a task running swift-websocket's client, fed by an ordered send stream.
final class WebSocketConnection: TransportConnection, @unchecked Sendable {
    // @unchecked because `task` and `closedEventSent` are protected by `lock`; `outgoing` is thread-safe.
    private let onEvent: @Sendable (TransportEvent) -> Void
    private let outgoing: AsyncStream<String>.Continuation
    private let outgoingStream: AsyncStream<String>
    private let lock = NIOLock()
    /// Protected by `lock`.
    private var task: Task<Void, Never>?
    /// Protected by `lock`.
    private var closedEventSent = false

    init(onEvent: @escaping @Sendable (TransportEvent) -> Void) {
        self.onEvent = onEvent
        (outgoingStream, outgoing) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .unbounded)
    }

    func start(url: URL, configuration: WebSocketTransport.Configuration, logger: Logger) {
        // One event loop for the socket and for the tasks that read and write it (see EventLoopTaskExecutor).
        let eventLoop = configuration.eventLoopGroup.next()
        let body: @Sendable () async -> Void = { [outgoingStream] in
            let error = await Self.run(url: url, configuration: configuration, eventLoop: eventLoop, logger: logger, outgoing: outgoingStream, onEvent: self.onEvent)
            self.sendClosed(error)
        }
        let task: Task<Void, Never>
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, *) {
            task = Task(executorPreference: EventLoopTaskExecutor(eventLoop), operation: body)
        } else {
            task = Task(operation: body)
        }
        lock.withLock { self.task = task }
    }

    func send(_ frame: String) {
        outgoing.yield(frame)
    }

    func close() {
        outgoing.finish()
        let task = lock.withLock { self.task }
        task?.cancel()
        sendClosed(nil)
    }

    private func sendClosed(_ error: TransportError?) {
        let first: Bool = lock.withLock {
            defer { closedEventSent = true }
            return !closedEventSent
        }
        if first { onEvent(.closed(error)) }
    }

    private static func run(
        url: URL,
        configuration: WebSocketTransport.Configuration,
        eventLoop: any EventLoop,
        logger: Logger,
        outgoing: AsyncStream<String>,
        onEvent: @escaping @Sendable (TransportEvent) -> Void
    ) async -> TransportError? {
        guard let scheme = url.scheme?.lowercased(), ["ws", "wss", "http", "https"].contains(scheme), let host = url.host else {
            return TransportError(.invalidURL, "not a ws:// or wss:// URL: \(url)")
        }
        let secure = scheme == "wss" || scheme == "https"
        var wsConfiguration = WebSocketClientConfiguration(
            maxFrameSize: configuration.maxFrameSize,
            extensions: configuration.compression ? [.perMessageDeflate(maxDecompressedFrameSize: configuration.maxDecompressedFrameSize)] : [],
            sniHostname: configuration.tlsServerName
        )
        wsConfiguration.validateUTF8 = true
        var tls: TLSConfiguration?
        if secure {
            if configuration.tlsServerName == nil, host.isIPAddressLiteral {
                return TransportError(.invalidURL, "wss to the IP address \(host) needs WebSocketTransport.Configuration.tlsServerName (SNI cannot carry an IP address)")
            }
            var base = configuration.tlsConfiguration ?? TLSConfiguration.makeClientConfiguration()
            if configuration.tlsConfiguration == nil, let roots = configuration.trustRoots { base.trustRoots = roots }
            tls = base
        }
        let maxMessageSize = configuration.maxMessageSize
        do {
            let closeFrame = try await WebSocketClient.connect(
                url: url.absoluteString,
                configuration: wsConfiguration,
                tlsConfiguration: tls,
                eventLoopGroup: eventLoop,
                logger: logger
            ) { inbound, outbound, _ in
                onEvent(.opened)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await frame in outgoing {
                            try await outbound.write(.text(frame))
                        }
                        try? await outbound.close(.normalClosure, reason: nil)
                    }
                    group.addTask {
                        for try await message in inbound.messages(maxSize: maxMessageSize) {
                            switch message {
                            case .text(let text): onEvent(.text(text))
                            case .binary(let buffer): onEvent(.binary(byteCount: buffer.readableBytes))
                            }
                        }
                    }
                    _ = try await group.next()
                    group.cancelAll()
                }
            }
            if let closeFrame, closeFrame.closeCode != .normalClosure, closeFrame.closeCode != .goingAway {
                return TransportError(.closedByServer(code: Int(UInt16(webSocketErrorCode: closeFrame.closeCode))), "closed with code \(closeFrame.closeCode) \(closeFrame.reason ?? "")")
            }
            return nil
        } catch is CancellationError {
            return nil
        } catch let error as NIOSSLError {
            return TransportError(.tlsFailed, "\(error)")
        } catch let error as BoringSSLError {
            return TransportError(.tlsFailed, "\(error)")
        } catch let error as WebSocketClientError where error == .serverSentMessageTooLarge {
            return TransportError(.messageTooLarge, "\(error)")
        } catch {
            let text = String(describing: error)
            if text.contains("SSL") || text.contains("certificate") || text.contains("handshake") {
                return TransportError(.tlsFailed, text)
            }
            return TransportError(.connectFailed, text)
        }
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
