import Foundation
import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOSSL
import NIOWebSocket
import WSClient
import WSCompression

/// One WebSocket connection attempt: a task running swift-websocket's client, fed by an ordered send queue.
///
/// Two rules keep a hostile server from stalling or growing the client:
/// - a failure to read the server's frames (a message over the limit, invalid UTF-8, a protocol error) is reported
///   as `.closed` with its close code **at once**; the close handshake then finishes (or times out) in the
///   background, so the client reconnects without waiting for a server that never answers;
/// - frames waiting to be written are counted: past ``WebSocketTransport/Configuration/maxBufferedOutboundBytes``
///   the connection fails with ``TransportError/Kind/sendBufferFull`` instead of queueing more.
final class WebSocketConnection: TransportConnection, @unchecked Sendable {
    // @unchecked because `state` is protected by its lock; `outgoing` is thread-safe.
    private struct State {
        var task: Task<Void, Never>?
        var eventLoop: (any EventLoop)?
        /// ``WebSocketTransport/Configuration/closeTimeout``.
        var closeTimeout: Duration = .seconds(2)
        var opened = false
        var closedEventSent = false
        var bufferedBytes = 0
    }

    private let onEvent: @Sendable (TransportEvent) -> Void
    private let outgoing = OutboundFrames()
    private let maxBufferedOutboundBytes: Int
    private let state = NIOLockedValueBox(State())

    /// Where the reader waits while the client catches up (``ReadGate``), if the client gave one.
    private let readGate: ReadGate?
    /// What the connection carried on the wire.
    private let wire = WireCounter()

    var wireStatistics: TransportWireStatistics? { wire.statistics }

    init(
        maxBufferedOutboundBytes: Int, readGate: ReadGate? = nil, onEvent: @escaping @Sendable (TransportEvent) -> Void
    ) {
        self.onEvent = onEvent
        self.readGate = readGate
        self.maxBufferedOutboundBytes = maxBufferedOutboundBytes
    }

    func start(url: URL, configuration: WebSocketTransport.Configuration, logger: Logger) {
        // One event loop for the socket and for the tasks that read and write it (see EventLoopTaskExecutor).
        let eventLoop = configuration.eventLoopGroup.next()
        // Everything the attempt needs is prepared here, outside the task: an async function's frame lives as long as
        // the connection, and with many clients in one process every byte of it counts (a TLS configuration is large).
        let body: @Sendable () async -> Void
        switch ConnectPlan.make(url: url, configuration: configuration, wire: wire) {
        case .success(let plan):
            body = {
                let error = await self.run(plan, eventLoop: eventLoop, logger: logger)
                self.sendClosed(error)
            }
        case .failure(let error):
            body = { self.sendClosed(error) }
        }
        let task: Task<Void, Never>
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, *) {
            task = Task(executorPreference: EventLoopTaskExecutor(eventLoop), operation: body)
        } else {
            task = Task(operation: body)
        }
        state.withLockedValue {
            $0.task = task
            $0.eventLoop = eventLoop
            $0.closeTimeout = configuration.closeTimeout
        }
    }

    func send(_ frame: String) {
        let count = frame.utf8.count
        let overflow: Bool = state.withLockedValue {
            guard !$0.closedEventSent else { return false }
            $0.bufferedBytes += count
            return $0.bufferedBytes > maxBufferedOutboundBytes
        }
        if overflow {
            stop(
                reporting: TransportError(
                    .sendBufferFull,
                    "more than \(maxBufferedOutboundBytes) bytes waiting to be sent: the server is not reading"))
        } else {
            outgoing.append(frame)
        }
    }

    func close() {
        stop(reporting: nil)
    }

    /// Writes what is queued, then closes normally (the writer ends the queue with a close frame); cut after
    /// ``WebSocketTransport/Configuration/closeTimeout`` if the frames and the close handshake take longer.
    func closeAfterSending() {
        outgoing.finishAfterQueued()
        let (task, eventLoop, limit) = state.withLockedValue { ($0.task, $0.eventLoop, $0.closeTimeout) }
        eventLoop?.scheduleTask(
            in: .nanoseconds(
                Int64(limit.components.seconds) * 1_000_000_000 + limit.components.attoseconds / 1_000_000_000)
        ) { task?.cancel() }
    }

    /// Reports the connection closed (with `error`, if any) at once and stops it.
    private func stop(reporting error: TransportError?) {
        sendClosed(error)
        outgoing.finish()
        let task = state.withLockedValue { $0.task }
        task?.cancel()
    }

    private func wrote(_ count: Int) {
        state.withLockedValue { $0.bufferedBytes -= count }
    }

    private func sendClosed(_ error: TransportError?) {
        let first: Bool = state.withLockedValue { state in
            defer { state.closedEventSent = true }
            return !state.closedEventSent
        }
        if first { onEvent(.closed(error)) }
    }

    private func run(_ plan: ConnectPlan, eventLoop: any EventLoop, logger: Logger) async -> TransportError? {
        do {
            let session: WebSocketDataHandler<WebSocketClient.Context> = { inbound, outbound, _ in
                self.state.withLockedValue { $0.opened = true }
                self.onEvent(.opened)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await self.write(to: outbound) }
                    group.addTask { try await self.read(inbound, replyingOn: outbound, plan: plan) }
                    _ = try await group.next()
                    group.cancelAll()
                }
            }
            let closeFrame: WebSocketCloseFrame?
            if let proxy = plan.proxy {
                closeFrame = try await WebSocketClient.connect(
                    url: plan.url, configuration: plan.webSocket, tlsConfiguration: plan.tls, proxySettings: proxy,
                    eventLoopGroup: eventLoop, logger: logger, handler: session)
            } else {
                closeFrame = try await WebSocketClient.connect(
                    url: plan.url, configuration: plan.webSocket, tlsConfiguration: plan.tls, eventLoopGroup: eventLoop,
                    logger: logger, handler: session)
            }
            if let closeFrame, closeFrame.closeCode != .normalClosure, closeFrame.closeCode != .goingAway {
                let code = Int(UInt16(webSocketErrorCode: closeFrame.closeCode))
                return TransportError(
                    .closedByServer(code: code), "closed with code \(code) \(closeFrame.reason ?? "")")
            }
            return nil
        } catch let error as WebSocketClientError where error == .webSocketUpgradeFailed {
            return Self.upgradeRefused(plan, status: await UpgradeProbe.status(for: plan, on: eventLoop))
        } catch {
            return Self.transportError(for: error, opened: state.withLockedValue { $0.opened })
        }
    }

    /// The error for an upgrade the server refused with `status`, with the likely fix when the URL is the cause.
    static func upgradeRefused(_ plan: ConnectPlan, status: HTTPResponseStatus?) -> TransportError {
        let answer = status.map { "HTTP \($0.code) \($0.reasonPhrase)" } ?? "a response that is not a WebSocket upgrade"
        var message = "the server at \(plan.url) answered the WebSocket upgrade with \(answer)"
        if !(URLComponents(string: plan.url)?.path.hasSuffix("/websocket") ?? false) {
            message +=
                "; a Meteor server takes DDP at /websocket: "
                + "use http://host:port (DDPClient(url:) adds it) or ws://host:port/websocket"
        }
        return TransportError(.upgradeRefused(status: Int(status?.code ?? 0)), message)
    }

    /// Writes the queued frames in order, then closes normally once the queue ends (the client closed).
    private func write(to outbound: WebSocketOutboundWriter) async throws {
        // Negotiated by the upgrade, before this runs: read once, as the reader does, not under a lock per frame.
        let compressed = wire.isCompressed
        while let frames = await outgoing.next() {
            for frame in frames {
                try await outbound.write(.text(frame))
                let bytes = frame.utf8.count
                wrote(bytes)
                // Deflated, the extension counted what went on the wire.
                if !compressed { wire.countSent(bytes) }
            }
        }
        try? await outbound.close(.normalClosure, reason: nil)
    }

    /// Hands each whole message to the client; on a framing failure reports the connection closed at once, then
    /// closes with the failure's code. Any other failure of the inbound stream is thrown.
    private func read(
        _ inbound: WebSocketInboundStream, replyingOn outbound: WebSocketOutboundWriter, plan: ConnectPlan
    ) async throws {
        var assembler = WebSocketMessageAssembler(maxFrameSize: plan.maxFrameSize, maxMessageSize: plan.maxMessageSize)
        do {
            let compressed = wire.isCompressed
            for try await frame in inbound {
                // Inflated, the extension counted what came off the wire.
                if !compressed { wire.countReceived(frame.data.readableBytes) }
                switch try assembler.append(frame) {
                case .text(let text): onEvent(.text(text))
                case .binary(let byteCount): onEvent(.binary(byteCount: byteCount))
                case nil: continue
                }
                // Suspended, not blocked, while the client catches up: the event loop serves its other sockets.
                if let readGate, readGate.isClosed { await readGate.waitWhileClosed() }
            }
        } catch let failure as WebSocketMessageAssembler.Failure {
            // Report first: the close handshake below may wait for a server that never answers.
            sendClosed(failure.transportError)
            try? await outbound.close(failure.code, reason: nil)
        }
    }

    /// The transport error an attempt that threw ends with (`nil` when it was cancelled: the client closed it).
    private static func transportError(for error: any Error, opened: Bool) -> TransportError? {
        switch error {
        case is CancellationError:
            return nil
        case let error as NIOSSLError:
            return TransportError(.tlsFailed, "\(error)")
        case let error as BoringSSLError:
            return TransportError(.tlsFailed, "\(error)")
        case let error as WebSocketClientError where error == .serverSentMessageTooLarge:
            return TransportError(.messageTooLarge, "\(error)")
        default:
            let text = String(describing: error)
            if opened {
                // swift-websocket closed the socket after a framing error it does not report (garbage, a reserved
                // opcode, a frame over its limit) or the network failed.
                return TransportError(.other, "the connection failed: \(text)")
            }
            if text.contains("SSL") || text.contains("certificate") || text.contains("handshake") {
                return TransportError(.tlsFailed, text)
            }
            return TransportError(.connectFailed, text)
        }
    }
}

/// What one connection attempt needs, prepared before its task starts: swift-websocket's and TLS's configurations and
/// the message limits. A reference, so the connection's async frames hold a pointer, not the large structs.
final class ConnectPlan: Sendable {
    let url: String
    let webSocket: WebSocketClientConfiguration
    let tls: TLSConfiguration?
    /// The proxy to connect through, if any.
    let proxy: WebSocketProxySettings?
    /// Whether the connection may go through a proxy (one given, or one the environment names): the server cannot be
    /// asked directly what it answered an upgrade.
    var throughProxy: Bool {
        guard let proxy else { return false }
        guard case .environment = proxy.address else { return true }
        let environment = ProcessInfo.processInfo.environment
        let names = tls == nil ? ["http_proxy"] : ["https_proxy", "HTTPS_PROXY", "http_proxy"]
        return names.contains { environment[$0] != nil }
    }
    let maxFrameSize: Int
    let maxMessageSize: Int

    private init(
        url: String, webSocket: WebSocketClientConfiguration, tls: TLSConfiguration?, proxy: WebSocketProxySettings?,
        maxFrameSize: Int, maxMessageSize: Int
    ) {
        self.url = url
        self.webSocket = webSocket
        self.tls = tls
        self.proxy = proxy
        self.maxFrameSize = maxFrameSize
        self.maxMessageSize = maxMessageSize
    }

    /// `headers` as HTTP fields, sorted by name (`nil`: a name is not a valid field name).
    static func fields(_ headers: [String: String]) -> HTTPFields? {
        var fields = HTTPFields()
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            guard let fieldName = HTTPField.Name(name) else { return nil }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        return fields
    }

    /// swift-websocket's proxy settings for `proxy`.
    static func settings(_ proxy: WebSocketTransport.Configuration.Proxy) -> WebSocketProxySettings? {
        switch proxy.kind {
        case .http(let host, let port, let headers):
            guard let fields = fields(headers) else { return nil }
            return WebSocketProxySettings(host: host, port: port, type: .http(connectHeaders: fields))
        case .socks(let host, let port): return WebSocketProxySettings(host: host, port: port, type: .socks)
        case .environment: return .environment()
        }
    }

    /// swift-websocket's permessage-deflate, counted by `wire` when given.
    private static func deflate(_ maxDecompressedFrameSize: Int, countedBy wire: WireCounter?)
        -> WebSocketExtensionFactory
    {
        let deflate = WebSocketExtensionFactory.perMessageDeflate(maxDecompressedFrameSize: maxDecompressedFrameSize)
        return wire?.countingDeflate(deflate) ?? deflate
    }

    /// The plan for `url`, or why it cannot be connected to (not a WebSocket URL; `wss` to an IP without a name);
    /// `wire` counts its traffic.
    static func make(
        url: URL, configuration: WebSocketTransport.Configuration, wire: WireCounter? = nil
    ) -> Result<ConnectPlan, TransportError> {
        guard let scheme = url.scheme?.lowercased(), ["ws", "wss", "http", "https"].contains(scheme),
            let host = url.host
        else {
            return .failure(TransportError(.invalidURL, "not a ws:// or wss:// URL: \(url)"))
        }
        let secure = scheme == "wss" || scheme == "https"
        // swift-websocket rejects a frame over its limit without telling which close code it sent; with its limit at
        // the message limit, the assembler rejects frames over `maxFrameSize` itself and reports 1009.
        var webSocket = WebSocketClientConfiguration(
            maxFrameSize: max(configuration.maxFrameSize, configuration.maxMessageSize),
            extensions: configuration.compression
                ? [Self.deflate(configuration.maxDecompressedFrameSize, countedBy: wire)] : [],
            closeTimeout: configuration.closeTimeout,
            sniHostname: configuration.tlsServerName
        )
        webSocket.validateUTF8 = true
        guard let upgradeHeaders = fields(configuration.upgradeHeaders) else {
            // Not the names themselves: a mistyped one may carry its value (`"Authorization: Bearer …"`).
            let count = configuration.upgradeHeaders.keys.count { HTTPField.Name($0) == nil }
            return .failure(
                TransportError(.invalidURL, "\(count) upgrade header name(s) are not valid HTTP field names"))
        }
        webSocket.additionalHeaders = upgradeHeaders
        var proxy: WebSocketProxySettings?
        if let configured = configuration.proxy {
            guard let settings = settings(configured) else {
                return .failure(TransportError(.invalidURL, "a proxy header name is not a valid HTTP field name"))
            }
            proxy = settings
        }
        var tls: TLSConfiguration?
        if secure {
            if configuration.tlsServerName == nil, host.isIPAddressLiteral {
                return .failure(
                    TransportError(
                        .invalidURL,
                        "wss to the IP address \(host) needs WebSocketTransport.Configuration.tlsServerName "
                            + "(SNI cannot carry an IP address)"
                    ))
            }
            var base = configuration.tlsConfiguration ?? TLSConfiguration.makeClientConfiguration()
            if configuration.tlsConfiguration == nil, let roots = configuration.trustRoots { base.trustRoots = roots }
            tls = base
        }
        return .success(
            ConnectPlan(
                url: url.absoluteString, webSocket: webSocket, tls: tls, proxy: proxy,
                maxFrameSize: configuration.maxFrameSize, maxMessageSize: configuration.maxMessageSize))
    }
}
