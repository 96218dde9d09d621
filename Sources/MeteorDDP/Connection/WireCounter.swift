import Atomics
import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket
import WSClient

/// What one WebSocket connection carried on the wire (``TransportWireStatistics``): frame payload bytes both ways as
/// they crossed it. With permessage-deflate negotiated, swift-websocket's extension is wrapped
/// (``countingDeflate(_:)``) and the bytes are counted on its far side, compressed; without it, the connection counts
/// its frames itself (``countReceived(_:)``, ``countSent(_:)``). Two relaxed atomic adds a frame.
final class WireCounter: Sendable {
    private let received = ManagedAtomic<Int>(0)
    private let sent = ManagedAtomic<Int>(0)
    /// The extension's name once the server accepted it. Set once, by the upgrade.
    private let compression = NIOLockedValueBox<String?>(nil)

    var isCompressed: Bool { compression.withLockedValue { $0 != nil } }

    var statistics: TransportWireStatistics {
        TransportWireStatistics(
            compression: compression.withLockedValue { $0 }, bytesReceived: received.load(ordering: .relaxed),
            bytesSent: sent.load(ordering: .relaxed))
    }

    /// A frame of `bytes` came in with no compressing extension in between.
    func countReceived(_ bytes: Int) { received.wrappingIncrement(by: bytes, ordering: .relaxed) }

    /// A frame of `bytes` went out with no compressing extension in between.
    func countSent(_ bytes: Int) { sent.wrappingIncrement(by: bytes, ordering: .relaxed) }

    /// `deflate` (swift-websocket's permessage-deflate) with this counter around it: the connection's frames are
    /// counted as they cross the wire, and the server's acceptance is noted.
    func countingDeflate(_ deflate: WebSocketExtensionFactory) -> WebSocketExtensionFactory {
        WebSocketExtensionFactory { [self] in CountingBuilder(inner: deflate.build(), counter: self) }
    }

    /// The builder of the wrapped extension: negotiates as the inner one does.
    private struct CountingBuilder: WebSocketExtensionBuilder {
        static var name: String { "permessage-deflate" }
        let inner: any WebSocketExtensionBuilder
        let counter: WireCounter

        func clientRequestHeader() -> String { inner.clientRequestHeader() }
        func serverReponseHeader(to request: WebSocketExtensionHTTPParameters) -> String? {
            inner.serverReponseHeader(to: request)
        }
        func serverExtension(from request: WebSocketExtensionHTTPParameters) throws -> (any WebSocketExtension)? {
            try inner.serverExtension(from: request)
        }
        func clientExtension(from response: WebSocketExtensionHTTPParameters) throws -> (any WebSocketExtension)? {
            guard let accepted = try inner.clientExtension(from: response) else { return nil }
            counter.compression.withLockedValue { $0 = accepted.name }
            return CountingExtension(inner: accepted, counter: counter)
        }
    }

    /// The negotiated extension, counting each frame on its wire side.
    private struct CountingExtension: WebSocketExtension {
        let inner: any WebSocketExtension
        let counter: WireCounter

        var name: String { inner.name }
        var reservedBits: WebSocketFrame.ReservedBits { inner.reservedBits }

        func processReceivedFrame(_ frame: WebSocketFrame, context: WebSocketExtensionContext) async throws
            -> WebSocketFrame
        {
            counter.received.wrappingIncrement(by: frame.data.readableBytes, ordering: .relaxed)
            return try await inner.processReceivedFrame(frame, context: context)
        }

        func processFrameToSend(_ frame: WebSocketFrame, context: WebSocketExtensionContext) async throws
            -> WebSocketFrame
        {
            let sent = try await inner.processFrameToSend(frame, context: context)
            counter.sent.wrappingIncrement(by: sent.data.readableBytes, ordering: .relaxed)
            return sent
        }

        func shutdown() async { await inner.shutdown() }
    }
}
