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
/// `client_no_context_takeover`, `server_max_window_bits` from 9 to 15 (zlib cannot deflate with an 8-bit window) and
/// `client_max_window_bits` (it never limits the client's window: it inflates with the largest). An offer with any
/// other parameter, or a malformed one, is declined (RFC 7692 §5.1), and with no acceptable offer the connection is
/// not compressed.
struct PerMessageDeflateAgreement: Equatable, Sendable {
    var serverNoContextTakeover = false
    var clientNoContextTakeover = false
    var serverMaxWindowBits: Int?

    /// The agreement for a request's headers, or `nil` when it offers no permessage-deflate the server accepts.
    init?(requestHeaders: HTTPHeaders) {
        let offers = requestHeaders[canonicalForm: "Sec-WebSocket-Extensions"].flatMap { $0.split(separator: ",") }
        for offer in offers {
            let parts = offer.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.first == "permessage-deflate", let agreement = Self(parameters: parts.dropFirst()) else {
                continue
            }
            self = agreement
            return
        }
        return nil
    }

    private init?(parameters: ArraySlice<String>) {
        for parameter in parameters {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard let name = pair.first else { return nil } // an empty parameter
            let value = pair.count == 2 ? Int(pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))) : nil
            switch name {
            case "server_no_context_takeover" where pair.count == 1: serverNoContextTakeover = true
            case "client_no_context_takeover" where pair.count == 1: clientNoContextTakeover = true
            case "server_max_window_bits":
                guard let value, (9...15).contains(value) else { return nil }
                serverMaxWindowBits = value
            case "client_max_window_bits":
                guard pair.count == 1 || (value.map { (8...15).contains($0) } ?? false) else { return nil }
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
/// Every data message is sent compressed, however short (swift-websocket's client sends messages under 256 bytes as
/// they are; a server compressing everything is the stricter peer). A message that inflates past `maxMessageSize`, or
/// does not inflate, is an error: the session closes.
final class PerMessageDeflateHandler: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let agreement: PerMessageDeflateAgreement
    private let maxMessageSize: Int
    private let statistics: NIOLockedValueBox<PerMessageDeflateStatistics>
    private let compressor: ZlibCompressor
    private let decompressor: ZlibDecompressor
    /// Whether the message being received (from its first frame to its last) is compressed.
    private var inflating = false
    private var inflatedSize = 0

    init(
        agreement: PerMessageDeflateAgreement, maxMessageSize: Int,
        statistics: NIOLockedValueBox<PerMessageDeflateStatistics>
    ) throws {
        self.agreement = agreement
        self.maxMessageSize = maxMessageSize
        self.statistics = statistics
        compressor = try ZlibCompressor(
            algorithm: .deflate,
            configuration: ZlibConfiguration(windowSize: Int32(agreement.serverMaxWindowBits ?? 15))
        )
        // The largest window inflates whatever window the client deflates with.
        decompressor = try ZlibDecompressor(algorithm: .deflate, windowSize: 15)
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
        // compress-nio's maxSize bounds what it allocates (roughly: its buffers round up); the limit itself is checked
        // on what came out. It refuses output that reaches maxSize: one more byte lets a message of the limit through.
        let inflated = try compressed.decompressStream(with: decompressor, maxSize: maxMessageSize - inflatedSize + 1)
        inflatedSize += inflated.readableBytes
        guard inflatedSize <= maxMessageSize else { throw PerMessageDeflateError.messageTooLarge }
        if frame.fin {
            inflating = false
            // Input left over means the message ended the deflate stream (a final block, RFC 7692 §7.2.3): the next
            // message starts a new one.
            if agreement.clientNoContextTakeover || compressed.readableBytes > 0 { try decompressor.reset() }
            statistics.withLockedValue { $0.messagesInflated += 1 }
        }
        return WebSocketFrame(fin: frame.fin, opcode: frame.opcode, data: inflated)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frame = unwrapOutboundIn(data)
        guard frame.fin, frame.opcode == .text || frame.opcode == .binary else {
            return context.write(data, promise: promise)
        }
        do {
            var plain = frame.data
            var deflated = try plain.compressStream(with: compressor, flush: .sync)
            // Every complete sync flush ends with 00 00 FF FF, which the message leaves out (RFC 7692 §7.2.1).
            guard plain.readableBytes == 0, deflated.readableBytes >= 4,
                deflated.getBytes(at: deflated.writerIndex - 4, length: 4) == [0x00, 0x00, 0xFF, 0xFF]
            else {
                throw PerMessageDeflateError.incompleteFlush
            }
            deflated.moveWriterIndex(to: deflated.writerIndex - 4)
            if agreement.serverNoContextTakeover { try compressor.reset() }
            statistics.withLockedValue { $0.messagesDeflated += 1 }
            context.write(
                wrapOutboundOut(WebSocketFrame(fin: true, rsv1: true, opcode: frame.opcode, data: deflated)),
                promise: promise)
        } catch {
            promise?.fail(error)
            context.fireErrorCaught(error)
        }
    }
}

/// What ends a compressed connection: the compressor did not flush a whole message (it never should: the output
/// buffer is sized by zlib's bound), or a message inflated past the limit.
enum PerMessageDeflateError: Error {
    case incompleteFlush
    /// A message inflated past the server's `maxFrameSize`.
    case messageTooLarge
}
