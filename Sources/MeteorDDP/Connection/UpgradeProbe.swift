import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// What a server answered a WebSocket upgrade with, when it did not upgrade: swift-websocket reports only "upgrade
/// failed", so the request is made once more over plain HTTP/1.1 (same URL, same TLS configuration, the same
/// upgrade headers) and the response's status read. Used only after a refused upgrade, to name the status in the
/// error; it waits at most ``timeout``.
enum UpgradeProbe {
    static let timeout = TimeAmount.seconds(5)

    /// The status the server answers an upgrade request for `plan` with (`nil`: no answer in time, or none at all).
    static func status(for plan: ConnectPlan, on eventLoop: any EventLoop) async -> HTTPResponseStatus? {
        // Through a proxy the server cannot be asked directly: the status stays unknown (not a permanent refusal).
        guard !plan.throughProxy else { return nil }
        guard let components = URLComponents(string: plan.url), let host = components.host else { return nil }
        let port = components.port ?? (plan.tls == nil ? 80 : 443)
        let path =
            (components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath)
            + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
        let promise = eventLoop.makePromise(of: HTTPResponseHead.self)
        let timeout = eventLoop.scheduleTask(in: timeout) { promise.fail(ChannelError.connectTimeout(Self.timeout)) }
        defer { timeout.cancel() }
        do {
            let tls = try plan.tls.map { try NIOSSLContext(configuration: $0) }
            let serverName = plan.webSocket.sniHostname ?? host
            let channel = try await ClientBootstrap(group: eventLoop)
                .connectTimeout(Self.timeout)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if let tls {
                            try channel.pipeline.syncOperations.addHandler(
                                NIOSSLClientHandler(context: tls, serverHostname: serverName))
                        }
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        try channel.pipeline.syncOperations.addHandler(ResponseHeadReader(promise: promise))
                    }
                }
                .connect(host: host, port: port).get()
            var headers = HTTPHeaders()
            headers.add(name: "Host", value: components.port.map { "\(host):\($0)" } ?? host)
            headers.add(name: "Connection", value: "Upgrade")
            headers.add(name: "Upgrade", value: "websocket")
            headers.add(name: "Sec-WebSocket-Version", value: "13")
            headers.add(
                name: "Sec-WebSocket-Key",
                value: Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString())
            for field in plan.webSocket.additionalHeaders { headers.add(name: field.name.rawName, value: field.value) }
            channel.write(
                HTTPClientRequestPart.head(
                    HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers)), promise: nil)
            channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
            let head = try? await promise.futureResult.get()
            try? await channel.close()
            return head?.status
        } catch {
            promise.fail(error)
            return nil
        }
    }

    /// Hands the response head to the probe and closes the channel.
    private final class ResponseHeadReader: ChannelInboundHandler, Sendable {
        typealias InboundIn = HTTPClientResponsePart
        let promise: EventLoopPromise<HTTPResponseHead>

        init(promise: EventLoopPromise<HTTPResponseHead>) {
            self.promise = promise
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if case .head(let head) = unwrapInboundIn(data) {
                promise.succeed(head)
                context.close(promise: nil)
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            promise.fail(ChannelError.ioOnClosedChannel)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            promise.fail(error)
            context.close(promise: nil)
        }
    }
}
