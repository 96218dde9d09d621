import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import TestSupport

/// A TCP proxy on 127.0.0.1 that injects faults between a client and a server: it drops each connection after a random
/// time, sometimes cutting the last chunk in half first (a frame cut mid-way), refuses new connections for a while
/// after some drops, and delays chunks (keeping their order). Faults can be turned off to let the client quiesce.
///
/// Everything about one proxied connection runs on the accepted channel's event loop (the upstream channel is made on
/// the same loop), so a link needs no lock; the proxy-wide state (refusal window, figures, random numbers) is protected
/// by `state`'s lock.
final class FaultInjectingProxy: @unchecked Sendable {
    // @unchecked because the mutable state is in `state` (a lock) and `serverChannel` is set once in `start()`.

    struct Faults: Sendable {
        /// How long a connection lives before it is dropped, in seconds.
        var connectionLifetime: ClosedRange<Double> = 0.5...3.0
        /// The chance that a drop cuts the chunk in flight in half first.
        var cutMidFrameProbability = 0.4
        /// The chance that a drop is followed by a time of refused connections, and how long, in seconds.
        var refuseProbability = 0.3
        var refuseDuration: ClosedRange<Double> = 0.2...1.5
        /// The chance that a chunk is delayed, and by how much, in milliseconds (order is kept).
        var delayProbability = 0.2
        var delay: ClosedRange<Double> = 1...30
    }

    /// What the proxy did.
    struct Figures: Sendable, CustomStringConvertible {
        var connections = 0
        var drops = 0
        var cutsMidFrame = 0
        var refused = 0
        var delayedChunks = 0
        var description: String {
            "connections \(connections), drops \(drops) (\(cutsMidFrame) cut mid-frame), "
                + "refused \(refused), delayed chunks \(delayedChunks)"
        }
    }

    private struct State {
        var faultsEnabled = true
        var refuseUntil: NIODeadline?
        var figures = Figures()
        var random: SplitMix64
        var links: [ObjectIdentifier: ProxyLink] = [:]
    }

    let faults: Faults
    private let upstreamPort: Int
    private let group: any EventLoopGroup
    private let state: NIOLockedValueBox<State>
    private var serverChannel: (any Channel)?

    init(
        upstreamPort: Int, faults: Faults = Faults(), seed: UInt64,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.upstreamPort = upstreamPort
        self.faults = faults
        self.group = group
        self.state = NIOLockedValueBox(State(random: SplitMix64(seed: seed)))
    }

    /// Listens on an ephemeral port of 127.0.0.1 and returns it.
    func start() async throws -> Int {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { [weak self] channel in
                guard let self else { return channel.close() }
                return self.accept(channel)
            }
        let channel = try await bootstrap.bind(host: "127.0.0.1", port: 0).get()
        serverChannel = channel
        return channel.localAddress!.port!
    }

    func stop() async throws {
        try await serverChannel?.close()
        for link in state.withLockedValue({ Array($0.links.values) }) { link.loop.execute { link.close() } }
    }

    /// Stops (or resumes) injecting faults: connections then live until closed by an end, nothing is delayed or
    /// refused.
    var faultsEnabled: Bool {
        get { state.withLockedValue { $0.faultsEnabled } }
        set {
            state.withLockedValue {
                $0.faultsEnabled = newValue
                if !newValue { $0.refuseUntil = nil }
            }
        }
    }

    var figures: Figures { state.withLockedValue { $0.figures } }

    // MARK: - Connections

    private func accept(_ client: any Channel) -> EventLoopFuture<Void> {
        let refuse: Bool = state.withLockedValue { state in
            guard state.faultsEnabled, let until = state.refuseUntil, until > .now() else { return false }
            state.figures.refused += 1
            return true
        }
        if refuse { return client.close() }
        let link = ProxyLink(client: client, proxy: self)
        state.withLockedValue {
            $0.figures.connections += 1
            $0.links[ObjectIdentifier(link)] = link
        }
        return client.pipeline.addHandler(RelayHandler(link: link, direction: .toServer)).flatMap {
            ClientBootstrap(group: client.eventLoop)
                .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { $0.pipeline.addHandler(RelayHandler(link: link, direction: .toClient)) }
                .connect(host: "127.0.0.1", port: self.upstreamPort)
                .map { server in link.serverConnected(server) }
                .recover { _ in link.close() }
        }
    }

    fileprivate func linkClosed(_ link: ProxyLink) {
        state.withLockedValue { _ = $0.links.removeValue(forKey: ObjectIdentifier(link)) }
    }

    /// When the link should be dropped (nil: faults are off).
    fileprivate func lifetime() -> TimeAmount? {
        state.withLockedValue { state in
            guard state.faultsEnabled else { return nil }
            return .nanoseconds(Int64(state.random.next(in: faults.connectionLifetime) * 1e9))
        }
    }

    /// A drop is due: whether to cut the chunk in flight first. Starts a refusal window sometimes.
    fileprivate func dropping() -> (drop: Bool, cut: Bool) {
        state.withLockedValue { state in
            guard state.faultsEnabled else { return (false, false) }
            state.figures.drops += 1
            if state.random.nextDouble() < faults.refuseProbability {
                let seconds = state.random.next(in: faults.refuseDuration)
                state.refuseUntil = .now() + .nanoseconds(Int64(seconds * 1e9))
            }
            let cut = state.random.nextDouble() < faults.cutMidFrameProbability
            if cut { state.figures.cutsMidFrame += 1 }
            return (true, cut)
        }
    }

    /// How long to delay a chunk (zero: not delayed).
    fileprivate func chunkDelay() -> TimeAmount {
        state.withLockedValue { state in
            guard state.faultsEnabled, state.random.nextDouble() < faults.delayProbability else { return .zero }
            state.figures.delayedChunks += 1
            return .nanoseconds(Int64(state.random.next(in: faults.delay) * 1e6))
        }
    }
}

/// One proxied connection. Confined to the client channel's event loop.
private final class ProxyLink: @unchecked Sendable {
    // @unchecked because every member is touched only on `loop`.
    enum Direction { case toServer, toClient }

    let loop: any EventLoop
    private let client: any Channel
    private var server: (any Channel)?
    private weak var proxy: FaultInjectingProxy?
    /// Chunks for the server that arrived before it was connected.
    private var waitingForServer: [ByteBuffer] = []
    /// Per direction: when the last delayed chunk goes out, and how many are still scheduled (later chunks go behind).
    private var lastDeadline: [Direction: NIODeadline] = [:]
    private var scheduled: [Direction: Int] = [:]
    /// Set when a drop cuts the next chunk written to the client in half.
    private var cutNextChunk = false
    /// Set once the half chunk was written: nothing follows it, the link closes.
    private var cutWritten = false
    private var closed = false

    init(client: any Channel, proxy: FaultInjectingProxy) {
        self.loop = client.eventLoop
        self.client = client
        self.proxy = proxy
    }

    func serverConnected(_ server: any Channel) {
        guard !closed else {
            server.close(promise: nil)
            return
        }
        self.server = server
        for chunk in waitingForServer { server.write(chunk, promise: nil) }
        waitingForServer = []
        server.flush()
        scheduleDrop()
    }

    private func scheduleDrop() {
        guard let lifetime = proxy?.lifetime() else { return }
        loop.scheduleTask(in: lifetime) { [self] in
            guard !closed, let proxy else { return }
            let (drop, cut) = proxy.dropping()
            if !drop { return }
            if cut { cutNextChunk = true } else { close() }
        }
    }

    func forward(_ chunk: ByteBuffer, _ direction: Direction) {
        guard !closed else { return }
        let delay = proxy?.chunkDelay() ?? .zero
        let outstanding = scheduled[direction, default: 0]
        if delay == .zero, outstanding == 0 {
            write(chunk, direction)
            return
        }
        let deadline = max(lastDeadline[direction] ?? .now(), .now() + delay)
        lastDeadline[direction] = deadline
        scheduled[direction] = outstanding + 1
        loop.scheduleTask(deadline: deadline) { [self] in
            scheduled[direction, default: 1] -= 1
            write(chunk, direction)
        }
    }

    private func write(_ chunk: ByteBuffer, _ direction: Direction) {
        guard !closed, !cutWritten else { return }
        switch direction {
        case .toClient where cutNextChunk:
            // The cut applies to the chunk that goes out next, in order: cutting one that arrived while earlier ones
            // waited for their delay put its half ahead of them (the client then read a frame made of a header and
            // bytes from another frame: a one-character message in a 600 s soak). Nothing is written after it.
            var chunk = chunk
            let half = chunk.readSlice(length: max(1, chunk.readableBytes / 2))!
            cutWritten = true
            client.writeAndFlush(half).whenComplete { [self] _ in close() }
        case .toClient:
            client.writeAndFlush(chunk, promise: nil)
        case .toServer:
            if let server { server.writeAndFlush(chunk, promise: nil) } else { waitingForServer.append(chunk) }
        }
    }

    func close() {
        guard !closed else { return }
        closed = true
        client.close(promise: nil)
        server?.close(promise: nil)
        proxy?.linkClosed(self)
    }
}

/// Hands what one side sends to the link.
private final class RelayHandler: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked because it is used only on its channel's event loop.
    typealias InboundIn = ByteBuffer

    private let link: ProxyLink
    private let direction: ProxyLink.Direction

    init(link: ProxyLink, direction: ProxyLink.Direction) {
        self.link = link
        self.direction = direction
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        link.forward(unwrapInboundIn(data), direction)
    }

    func channelInactive(context: ChannelHandlerContext) {
        link.close()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        link.close()
    }
}
