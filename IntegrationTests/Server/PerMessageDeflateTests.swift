import CompressNIO
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOWebSocket
import XCTest

@testable import DDPTestServer

/// DDPTestServer's permessage-deflate: which offers it takes, and the frames its handler reads and writes (on an
/// embedded channel, so fragments and final blocks, which swift-websocket's client never sends, are covered too).
final class PerMessageDeflateTests: XCTestCase {
    private func agreement(_ offer: String) -> PerMessageDeflateAgreement? {
        PerMessageDeflateAgreement(requestHeaders: HTTPHeaders([("Sec-WebSocket-Extensions", offer)]))
    }

    func testTheFirstOfferTheServerCanHonourIsTaken() {
        XCTAssertEqual(agreement("permessage-deflate")?.responseHeader, "permessage-deflate")
        XCTAssertEqual(agreement("permessage-deflate; client_max_window_bits")?.responseHeader, "permessage-deflate")
        XCTAssertEqual(
            agreement("permessage-deflate; server_no_context_takeover; client_max_window_bits=10")?.responseHeader,
            "permessage-deflate; server_no_context_takeover")
        XCTAssertEqual(
            agreement("permessage-deflate; server_max_window_bits=8, permessage-deflate; server_max_window_bits=12")?
                .responseHeader,
            "permessage-deflate; server_max_window_bits=12", "zlib cannot deflate with 8 bits: the second offer")
        XCTAssertEqual(agreement("permessage-deflate; client_no_context_takeover")?.clientNoContextTakeover, true)
        for declined in [
            "x-webkit-deflate-frame", "permessage-deflate; foo", "permessage-deflate; server_max_window_bits=16",
            "permessage-deflate; server_max_window_bits", "permessage-deflate; ;client_max_window_bits",
            "permessage-deflate; client_max_window_bits=x", "permessage-deflate; =3"
        ] {
            XCTAssertNil(agreement(declined), declined)
        }
    }

    private func channel(
        _ agreement: PerMessageDeflateAgreement = PerMessageDeflateAgreement(
            requestHeaders: HTTPHeaders([("Sec-WebSocket-Extensions", "permessage-deflate")]))!,
        maxMessageSize: Int = 1 << 20
    ) throws -> (EmbeddedChannel, NIOLockedValueBox<PerMessageDeflateStatistics>) {
        let statistics = NIOLockedValueBox(PerMessageDeflateStatistics())
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            PerMessageDeflateHandler(agreement: agreement, maxMessageSize: maxMessageSize, statistics: statistics))
        return (channel, statistics)
    }

    /// `text` deflated as a peer does it: a sync flush with its 00 00 FF FF tail left out.
    private func deflated(_ text: String, with compressor: ZlibCompressor) throws -> ByteBuffer {
        var plain = ByteBuffer(string: text)
        var output = try plain.compressStream(with: compressor, flush: .sync)
        output.moveWriterIndex(to: output.writerIndex - 4)
        return output
    }

    private func text(_ frames: [WebSocketFrame]) -> String {
        var all = ByteBuffer()
        for frame in frames {
            var data = frame.data
            all.writeBuffer(&data)
        }
        return String(buffer: all)
    }

    private func readInbound(_ channel: EmbeddedChannel) throws -> [WebSocketFrame] {
        var frames: [WebSocketFrame] = []
        while let frame = try channel.readInbound(as: WebSocketFrame.self) { frames.append(frame) }
        return frames
    }

    func testAFragmentedCompressedMessageIsInflatedFrameByFrame() throws {
        let (channel, statistics) = try channel()
        let message = String(repeating: #"{"msg":"method","method":"a","params":[1,2,3],"id":"1"}"#, count: 40)
        var compressed = try deflated(message, with: ZlibCompressor(algorithm: .deflate))
        let first = compressed.readSlice(length: compressed.readableBytes / 2)!
        try channel.writeInbound(WebSocketFrame(fin: false, rsv1: true, opcode: .text, data: first))
        try channel.writeInbound(WebSocketFrame(fin: true, opcode: .continuation, data: compressed))
        let frames = try readInbound(channel)
        XCTAssertEqual(frames.map(\.opcode), [.text, .continuation])
        XCTAssertEqual(frames.map(\.rsv1), [false, false])
        XCTAssertEqual(text(frames), message)
        XCTAssertEqual(statistics.withLockedValue { $0.messagesInflated }, 1)
    }

    func testAMessageEndingTheDeflateStreamIsFollowedByOneStartingANewStream() throws {
        let (channel, _) = try channel()
        // A peer may end a message with a final block (RFC 7692 §7.2.3); its next message is a new stream.
        var plain = ByteBuffer(string: String(repeating: "final block ", count: 30))
        let ended = try plain.compressStream(with: ZlibCompressor(algorithm: .deflate), flush: .finish)
        try channel.writeInbound(WebSocketFrame(fin: true, rsv1: true, opcode: .text, data: ended))
        let second = String(repeating: "next message ", count: 30)
        try channel.writeInbound(
            WebSocketFrame(
                fin: true, rsv1: true, opcode: .text,
                data: try deflated(second, with: ZlibCompressor(algorithm: .deflate))))
        let frames = try readInbound(channel)
        XCTAssertEqual(frames.map { text([$0]) }, [String(repeating: "final block ", count: 30), second])
    }

    func testUncompressedMessagesAndControlFramesPassAsTheyAre() throws {
        let (channel, statistics) = try channel()
        try channel.writeInbound(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: "plain")))
        try channel.writeInbound(WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer(string: "p")))
        XCTAssertEqual(try readInbound(channel).map { text([$0]) }, ["plain", "p"])
        try channel.writeOutbound(WebSocketFrame(fin: true, opcode: .pong, data: ByteBuffer(string: "p")))
        XCTAssertEqual(
            try channel.readOutbound(as: WebSocketFrame.self)?.rsv1, false, "control frames are never compressed")
        XCTAssertEqual(statistics.withLockedValue { [$0.messagesInflated, $0.messagesDeflated] }, [0, 0])
    }

    func testMessagesAreSentCompressedWithoutTheTailHoweverShort() throws {
        let (channel, _) = try channel()
        try channel.writeOutbound(
            WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: #"{"msg":"ping"}"#)))
        var short = try XCTUnwrap(try channel.readOutbound(as: WebSocketFrame.self))
        XCTAssertTrue(short.rsv1)
        short.data.writeBytes([0x00, 0x00, 0xFF, 0xFF])
        XCTAssertEqual(
            String(buffer: try short.data.decompressStream(with: ZlibDecompressor(algorithm: .deflate))),
            #"{"msg":"ping"}"#)
    }

    func testLongMessagesAreSentCompressedWithoutTheTail() throws {
        let (channel, statistics) = try channel()
        let message = String(repeating: #"{"msg":"added","collection":"c","id":"x","fields":{"a":1}}"#, count: 20)
        try channel.writeOutbound(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: message)))
        let frame = try XCTUnwrap(try channel.readOutbound(as: WebSocketFrame.self))
        XCTAssertTrue(frame.rsv1)
        XCTAssertLessThan(frame.data.readableBytes, message.utf8.count / 4)
        var compressed = frame.data
        compressed.writeBytes([0x00, 0x00, 0xFF, 0xFF])
        let inflated = try compressed.decompressStream(with: ZlibDecompressor(algorithm: .deflate))
        XCTAssertEqual(String(buffer: inflated), message)
        XCTAssertEqual(statistics.withLockedValue { $0.messagesDeflated }, 1)
    }

    func testAMessageInflatingPastTheLimitIsAnErrorAndOneAtTheLimitIsNot() throws {
        let limit = 4_096
        let (channel, _) = try channel(maxMessageSize: limit)
        let compressor = try ZlibCompressor(algorithm: .deflate)
        try channel.writeInbound(
            WebSocketFrame(
                fin: true, rsv1: true, opcode: .text,
                data: try deflated(String(repeating: "a", count: limit), with: compressor)))
        XCTAssertEqual(try readInbound(channel).first?.data.readableBytes, limit)
        XCTAssertThrowsError(
            try channel.writeInbound(
                WebSocketFrame(
                    fin: true, rsv1: true, opcode: .text,
                    data: try deflated(String(repeating: "a", count: limit + 1), with: compressor))))
    }
}
