import CompressNIO
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOWebSocket

/// The permessage-deflate parameters (RFC 7692) the test server agreed to for one connection, read from the client's
/// `Sec-WebSocket-Extensions` offers.
///
/// The server takes the first offer it can honour: it accepts `server_no_context_takeover`,
/// `client_no_context_takeover` and `server_max_window_bits` from 9 to 15 (zlib cannot deflate with an 8-bit window),
/// and echoes `client_max_window_bits` only when the client gave it a value. An offer with any other parameter is
/// declined (RFC 7692 §5.1), and with no acceptable offer the connection is not compressed.
struct PerMessageDeflateAgreement: Equatable, Sendable {
    var serverNoContextTakeover = false
    var clientNoContextTakeover = false
    var serverMaxWindowBits: Int?
    var clientMaxWindowBits: Int?

    /// The agreement for a request's headers, or `nil` when it offers no permessage-deflate the server accepts.
    init?(requestHeaders: HTTPHeaders) {
        let offers = requestHeaders[canonicalForm: "Sec-WebSocket-Extensions"].flatMap { $0.split(separator: ",") }
        for offer in offers {
            let parts = offer.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.first == "permessage-deflate", let agreement = Self(parameters: parts.dropFirst()) else { continue }
            self = agreement
            return
        }
        return nil
    }

    private init?(parameters: ArraySlice<String>) {
        for parameter in parameters {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            let value = pair.count == 2 ? Int(pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))) : nil
            switch pair[0] {
            case "server_no_context_takeover" where pair.count == 1: serverNoContextTakeover = true
            case "client_no_context_takeover" where pair.count == 1: clientNoContextTakeover = true
            case "server_max_window_bits":
                guard let value, (9...15).contains(value) else { return nil }
                serverMaxWindowBits = value
            case "client_max_window_bits":
                if pair.count == 1 { continue }
                guard let value, (8...15).contains(value) else { return nil }
                clientMaxWindowBits = value
            default:
                return nil
            }
        }
    }

    /// The `Sec-WebSocket-Extensions` value of the server's response.
    var responseHeader: String {
        var header = "permessage-deflate"
        if serverNoContextTakeover { header += "; server_no_context_takeover" }
        if clientNoContextTakeover { header += "; client_no_context_takeover" }
        if let serverMaxWindowBits { header += "; server_max_window_bits=\(serverMaxWindowBits)" }
        if let clientMaxWindowBits { header += "; client_max_window_bits=\(clientMaxWindowBits)" }
        return header
    }
}

/// What the test server's permessage-deflate did, across all connections (for tests that must know compression was
/// really in use).
public struct PerMessageDeflateStatistics: Equatable, Sendable {
    /// Connections that agreed to compress.
    public var connections = 0
    /// Compressed messages received and inflated.
    public var messagesInflated = 0
    /// Messages sent compressed.
    public var messagesDeflated = 0
}

/// Compresses and decompresses a connection's data frames with permessage-deflate, between the WebSocket frame codec
/// and the frame aggregator (which would drop the RSV1 bit of a fragmented message). Runs on the channel's event loop.
///
/// Messages shorter than ``minimumSizeToCompress`` are sent as they are, as swift-websocket's client does. A message
/// that inflates past `maxMessageSize`, or does not inflate, is an error: the session closes.
final class PerMessageDeflateHandler: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    static let minimumSizeToCompress = 256

    private let agreement: PerMessageDeflateAgreement
    private let maxMessageSize: Int
    private let statistics: NIOLockedValueBox<PerMessageDeflateStatistics>
    private let compressor: ZlibCompressor
    private let decompressor: ZlibDecompressor
    /// Whether the message being received (from its first frame to its last) is compressed.
    private var inflating = false
    private var inflatedSize = 0

    init(agreement: PerMessageDeflateAgreement, maxMessageSize: Int, statistics: NIOLockedValueBox<PerMessageDeflateStatistics>) throws {
        self.agreement = agreement
        self.maxMessageSize = maxMessageSize
        self.statistics = statistics
        compressor = try ZlibCompressor(
            algorithm: .deflate,
            configuration: ZlibConfiguration(windowSize: Int32(agreement.serverMaxWindowBits ?? 15))
        )
        decompressor = try ZlibDecompressor(algorithm: .deflate, windowSize: Int32(agreement.clientMaxWindowBits ?? 15))
        statistics.withLockedValue { $0.connections += 1 }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text, .binary, .continuation:
            if frame.opcode != .continuation {
                inflating = frame.rsv1
                inflatedSize = 0
            }
            guard inflating else { return context.fireChannelRead(data) }
            do {
                context.fireChannelRead(wrapInboundOut(try inflate(frame)))
            } catch {
                context.fireErrorCaught(error)
            }
        default:
            context.fireChannelRead(data)
        }
    }

    private func inflate(_ frame: WebSocketFrame) throws -> WebSocketFrame {
        var compressed = frame.unmaskedData
        // The sender removed the empty stored block's tail that ends every message (RFC 7692 §7.2.2).
        if frame.fin { compressed.writeBytes([0x00, 0x00, 0xFF, 0xFF]) }
        let inflated = try compressed.decompressStream(with: decompressor, maxSize: maxMessageSize - inflatedSize)
        inflatedSize += inflated.readableBytes
        if frame.fin {
            inflating = false
            if agreement.clientNoContextTakeover { try decompressor.reset() }
            statistics.withLockedValue { $0.messagesInflated += 1 }
        }
        return WebSocketFrame(fin: frame.fin, opcode: frame.opcode, data: inflated)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frame = unwrapOutboundIn(data)
        guard frame.fin, frame.opcode == .text || frame.opcode == .binary,
              frame.data.readableBytes >= Self.minimumSizeToCompress else {
            return context.write(data, promise: promise)
        }
        do {
            var plain = frame.data
            var deflated = try plain.compressStream(with: compressor, flush: .sync)
            // Every sync flush ends with 00 00 FF FF, which the message leaves out (RFC 7692 §7.2.1).
            deflated.moveWriterIndex(to: deflated.writerIndex - 4)
            if agreement.serverNoContextTakeover { try compressor.reset() }
            statistics.withLockedValue { $0.messagesDeflated += 1 }
            context.write(wrapOutboundOut(WebSocketFrame(fin: true, rsv1: true, opcode: frame.opcode, data: deflated)), promise: promise)
        } catch {
            promise?.fail(error)
            context.fireErrorCaught(error)
        }
    }
}
