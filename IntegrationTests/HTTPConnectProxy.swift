import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// An HTTP proxy on 127.0.0.1 that serves `CONNECT` only, as a corporate proxy in front of a server does: it reads the
/// request, records its target and headers, connects there and then relays bytes both ways. For the transport's proxy
/// tests.
final class HTTPConnectProxy: Sendable {
    /// A `CONNECT` request the proxy served.
    struct Request: Sendable {
        let target: String
        /// By lower-cased name.
        let headers: [String: String]
    }

    private let channel: any Channel
    private let served: NIOLockedValueBox<[Request]>

    var port: Int { channel.localAddress?.port ?? 0 }
    var requests: [Request] { served.withLockedValue { $0 } }

    init() async throws {
        let served = NIOLockedValueBox<[Request]>([])
        self.served = served
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ConnectRequestHandler(served: served))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    func stop() async throws {
        try await channel.close()
    }
}

/// Reads a `CONNECT` request, connects to its target, answers 200 and glues the two channels.
private final class ConnectRequestHandler: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    // @unchecked because its state is confined to the channel's event loop.
    typealias InboundIn = ByteBuffer

    private let served: NIOLockedValueBox<[HTTPConnectProxy.Request]>
    private var buffered = ByteBuffer()
    private var connecting = false

    init(served: NIOLockedValueBox<[HTTPConnectProxy.Request]>) {
        self.served = served
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        buffered.writeBuffer(&bytes)
        guard !connecting, let text = buffered.getString(at: buffered.readerIndex, length: buffered.readableBytes),
            let end = text.range(of: "\r\n\r\n")
        else { return }
        connecting = true
        let head = text[..<end.lowerBound].components(separatedBy: "\r\n")
        let requestLine = head.first?.split(separator: " ") ?? []
        guard requestLine.count == 3, requestLine[0] == "CONNECT",
            let colon = requestLine[1].lastIndex(of: ":"),
            let port = Int(requestLine[1][requestLine[1].index(after: colon)...])
        else {
            context.close(promise: nil)
            return
        }
        let host = String(requestLine[1][..<colon])
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let separator = line.firstIndex(of: ":") else { continue }
            headers[line[..<separator].lowercased()] = line[line.index(after: separator)...].trimmingCharacters(
                in: .whitespaces)
        }
        served.withLockedValue { $0.append(.init(target: String(requestLine[1]), headers: headers)) }
        buffered.moveReaderIndex(forwardBy: text.utf8.distance(from: text.startIndex, to: end.upperBound))
        let client = context.channel
        let loopBoundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        ClientBootstrap(group: context.eventLoop)
            .channelInitializer { upstream in
                upstream.eventLoop.makeCompletedFuture {
                    try upstream.pipeline.syncOperations.addHandler(Glue(partner: client))
                }
            }
            .connect(host: host, port: port)
            .whenComplete { [self] result in
                let context = loopBoundContext.value
                switch result {
                case .failure:
                    context.close(promise: nil)
                case .success(let upstream):
                    let answer = ByteBuffer(string: "HTTP/1.1 200 Connection Established\r\n\r\n")
                    context.writeAndFlush(wrapOutboundOut(answer), promise: nil)
                    let rest = buffered
                    try? context.pipeline.syncOperations.addHandler(Glue(partner: upstream))
                    context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
                    if rest.readableBytes > 0 { upstream.writeAndFlush(rest, promise: nil) }
                }
            }
    }

    typealias OutboundOut = ByteBuffer
}

/// Relays what one channel reads to its partner, and closes the partner when it closes.
private final class Glue: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let partner: any Channel

    init(partner: any Channel) {
        self.partner = partner
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        partner.writeAndFlush(unwrapInboundIn(data), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner.close(promise: nil)
    }
}
