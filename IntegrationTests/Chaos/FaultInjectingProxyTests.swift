import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import TestSupport
import XCTest

/// The chaos soak's proxy keeps each connection's bytes in order, a drop's cut included: what a client receives is
/// always a prefix of what the server sent. (A cut chunk once overtook the chunks still waiting for their delay, and
/// the client read a WebSocket frame made of one frame's header and another's bytes.)
final class FaultInjectingProxyTests: XCTestCase {
    func testACutChunkNeverOvertakesTheDelayedOnes() async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        // A server that sends the bytes 0, 1, 2, … (mod 251) in chunks of 37, one every millisecond.
        let upstream = try await ServerBootstrap(group: group)
            .childChannelInitializer { $0.pipeline.addHandler(CountingSender()) }
            .bind(host: "127.0.0.1", port: 0).get()
        // Every chunk delayed by 20-30 ms, so chunks are always waiting when the drop (after 100 ms) cuts one.
        let faults = FaultInjectingProxy.Faults(
            connectionLifetime: 0.1...0.1, cutMidFrameProbability: 1, refuseProbability: 0, delayProbability: 1,
            delay: 20...30)
        let proxy = FaultInjectingProxy(upstreamPort: upstream.localAddress!.port!, faults: faults, seed: 7)
        let port = try await proxy.start()
        for _ in 0..<5 {
            let received = ReceivedBytes()
            let client = try await ClientBootstrap(group: group)
                .channelInitializer { $0.pipeline.addHandler(Receiver(into: received)) }
                .connect(host: "127.0.0.1", port: port).get()
            try await withTimeout(10, "the proxy's drop") { try await client.closeFuture.get() }
            let bytes = received.bytes
            XCTAssertGreaterThan(bytes.count, 0)
            let firstWrong = bytes.indices.first { bytes[$0] != UInt8($0 % 251) }
            XCTAssertNil(firstWrong, "byte \(firstWrong ?? -1) of \(bytes.count) is not the server's: out of order")
        }
        XCTAssertEqual(proxy.figures.cutsMidFrame, 5)
        try await proxy.stop()
        try await upstream.close()
    }
}

/// Sends 0, 1, 2, … (mod 251) in chunks of 37 bytes, one every millisecond, until the connection closes.
private final class CountingSender: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked because it is used only on its channel's event loop.
    typealias InboundIn = ByteBuffer
    private var next = 0
    private var task: RepeatedTask?

    func channelActive(context: ChannelHandlerContext) {
        let channel = context.channel
        task = channel.eventLoop.scheduleRepeatedTask(initialDelay: .zero, delay: .milliseconds(1)) { [self] task in
            guard channel.isActive else { return task.cancel() }
            var buffer = channel.allocator.buffer(capacity: 37)
            for _ in 0..<37 {
                buffer.writeInteger(UInt8(next % 251))
                next += 1
            }
            channel.writeAndFlush(buffer, promise: nil)
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        task?.cancel()
        context.fireChannelInactive()
    }
}

/// Collects what a connection receives.
private final class Receiver: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked because it is used only on its channel's event loop; `received` has its own lock.
    typealias InboundIn = ByteBuffer
    private let received: ReceivedBytes

    init(into received: ReceivedBytes) { self.received = received }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received.append(Self.unwrapInboundIn(data).readableBytesView)
    }
}

private final class ReceivedBytes: Sendable {
    private let storage = NIOLockedValueBox<[UInt8]>([])
    var bytes: [UInt8] { storage.withLockedValue { $0 } }
    func append(_ bytes: some Sequence<UInt8>) { storage.withLockedValue { $0.append(contentsOf: bytes) } }
}
