import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
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
        var opened = false
        var closedEventSent = false
        var bufferedBytes = 0
    }

    private let onEvent: @Sendable (TransportEvent) -> Void
    private let outgoing: AsyncStream<String>.Continuation
    private let outgoingStream: AsyncStream<String>
    private let maxBufferedOutboundBytes: Int
    private let state = NIOLockedValueBox(State())

    init(maxBufferedOutboundBytes: Int, onEvent: @escaping @Sendable (TransportEvent) -> Void) {
        self.onEvent = onEvent
        self.maxBufferedOutboundBytes = maxBufferedOutboundBytes
        (outgoingStream, outgoing) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .unbounded)
    }

    func start(url: URL, configuration: WebSocketTransport.Configuration, logger: Logger) {
        // One event loop for the socket and for the tasks that read and write it (see EventLoopTaskExecutor).
        let eventLoop = configuration.eventLoopGroup.next()
        let body: @Sendable () async -> Void = { [outgoingStream] in
            let error = await self.run(url: url, configuration: configuration, eventLoop: eventLoop, logger: logger, outgoing: outgoingStream)
            self.sendClosed(error)
        }
        let task: Task<Void, Never>
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, *) {
            task = Task(executorPreference: EventLoopTaskExecutor(eventLoop), operation: body)
        } else {
            task = Task(operation: body)
        }
        state.withLockedValue { $0.task = task }
    }

    func send(_ frame: String) {
        let count = frame.utf8.count
        let overflow: Bool = state.withLockedValue {
            guard !$0.closedEventSent else { return false }
            $0.bufferedBytes += count
            return $0.bufferedBytes > maxBufferedOutboundBytes
        }
        if overflow {
            stop(reporting: TransportError(.sendBufferFull, "more than \(maxBufferedOutboundBytes) bytes waiting to be sent: the server is not reading"))
        } else {
            outgoing.yield(frame)
        }
    }

    func close() {
        stop(reporting: nil)
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

    private func run(
        url: URL,
        configuration: WebSocketTransport.Configuration,
        eventLoop: any EventLoop,
        logger: Logger,
        outgoing: AsyncStream<String>
    ) async -> TransportError? {
        guard let scheme = url.scheme?.lowercased(), ["ws", "wss", "http", "https"].contains(scheme), let host = url.host else {
            return TransportError(.invalidURL, "not a ws:// or wss:// URL: \(url)")
        }
        let secure = scheme == "wss" || scheme == "https"
        // swift-websocket rejects a frame over its limit without telling which close code it sent; with its limit at
        // the message limit, the assembler rejects frames over `maxFrameSize` itself and reports 1009.
        var wsConfiguration = WebSocketClientConfiguration(
            maxFrameSize: max(configuration.maxFrameSize, configuration.maxMessageSize),
            extensions: configuration.compression ? [.perMessageDeflate(maxDecompressedFrameSize: configuration.maxDecompressedFrameSize)] : [],
            closeTimeout: configuration.closeTimeout,
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
        let maxFrameSize = configuration.maxFrameSize
        do {
            let closeFrame = try await WebSocketClient.connect(
                url: url.absoluteString,
                configuration: wsConfiguration,
                tlsConfiguration: tls,
                eventLoopGroup: eventLoop,
                logger: logger
            ) { inbound, outbound, _ in
                self.state.withLockedValue { $0.opened = true }
                self.onEvent(.opened)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await frame in outgoing {
                            try await outbound.write(.text(frame))
                            self.wrote(frame.utf8.count)
                        }
                        try? await outbound.close(.normalClosure, reason: nil)
                    }
                    group.addTask {
                        var assembler = WebSocketMessageAssembler(maxFrameSize: maxFrameSize, maxMessageSize: maxMessageSize)
                        do {
                            for try await frame in inbound {
                                switch try assembler.append(frame) {
                                case .text(let text): self.onEvent(.text(text))
                                case .binary(let byteCount): self.onEvent(.binary(byteCount: byteCount))
                                case nil: break
                                }
                            }
                        } catch let failure as WebSocketMessageAssembler.Failure {
                            // Report first: the close handshake below may wait for a server that never answers.
                            self.sendClosed(failure.transportError)
                            try? await outbound.close(failure.code, reason: nil)
                        }
                    }
                    _ = try await group.next()
                    group.cancelAll()
                }
            }
            if let closeFrame, closeFrame.closeCode != .normalClosure, closeFrame.closeCode != .goingAway {
                let code = Int(UInt16(webSocketErrorCode: closeFrame.closeCode))
                return TransportError(.closedByServer(code: code), "closed with code \(code) \(closeFrame.reason ?? "")")
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
            if state.withLockedValue({ $0.opened }) {
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
