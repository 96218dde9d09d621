import EJSON
import Foundation
import Logging
import MeteorDDP
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// A DDP server with Meteor's semantics on 127.0.0.1, for integration tests and the examples' embedded default.
///
/// For example:
/// ```swift
/// let server = DDPTestServer()
/// try await server.start()                 // an ephemeral port on 127.0.0.1
/// let client = DDPClient(url: server.url)
/// client.connect()
/// // …
/// try await server.stop()
/// ```
///
/// ## Concurrency
/// All DDP logic (sessions, publications with their merge boxes, methods, collections, accounts) runs on one serial
/// server queue; WebSocket I/O runs on SwiftNIO event loops. Handlers registered with ``publish(_:_:)`` and
/// ``method(_:_:)`` run on the server queue; use ``perform(_:)`` to touch collections from elsewhere.
/// Connection bookkeeping is protected by `state`'s lock.
public final class DDPTestServer: @unchecked Sendable {
    // @unchecked because connection bookkeeping is in `state`, protected by its lock, and the DDP registries below
    // (`collections`, `publications`, `methods`, `accounts`) are confined to `queue`.

    /// How the server behaves.
    public struct Configuration: Sendable {
        /// The address to bind; loopback only.
        public var host = "127.0.0.1"
        /// The port; 0 picks an ephemeral one.
        public var port = 0
        /// The DDP versions the server speaks, in order of preference (Meteor's server: `1`, `pre2`, `pre1`).
        public var supportedVersions: [String] = ["1", "pre2", "pre1"]
        /// Silence after which the server pings (Meteor's server: 15 s); `nil` disables its heartbeat.
        public var heartbeatInterval: Duration? = .seconds(15)
        /// How long the server waits for an answer to its ping before closing (Meteor: 15 s).
        public var heartbeatTimeout: Duration = .seconds(15)
        /// How long a session whose socket was lost waits for its client to resume it (Meteor 3.5+'s
        /// `disconnectGracePeriod`, 15 s); zero ends it with its socket, as servers before 3.5 do.
        public var disconnectGracePeriod: Duration = .seconds(15)
        /// Headers an upgrade request must carry, with these values, as an authenticating proxy in front of a server
        /// requires (an `Authorization`, a `Cookie`); names are compared without case. An upgrade without them is
        /// answered `401 Unauthorized`. Empty by default.
        public var requiredUpgradeHeaders: [String: String] = [:]
        /// The most messages a session in its grace period queues for its client (Meteor's `maxMessageQueueLength`,
        /// 100): one more and it ends at once.
        public var maxMessageQueueLength = 100
        /// TLS for `wss`; `nil` serves plain `ws`.
        public var tls: TLSConfiguration?
        /// Largest WebSocket frame accepted, and largest message once inflated.
        public var maxFrameSize = 16 << 20
        /// Whether the server accepts a client's permessage-deflate offer (RFC 7692), as Meteor's server does by
        /// default. Off by default here, so that tests see frames as sent; benchmarks turn it on to measure
        /// compression. What it did is in ``perMessageDeflateStatistics``.
        public var permessageDeflate = false
        /// Where the server logs. By default warnings (a publication that never calls ``PublicationContext/ready()``)
        /// go to standard error and nothing else is logged.
        public var logger: Logger = {
            var logger = Logger(
                label: "DDPTestServer", factory: { label in StreamLogHandler.standardError(label: label) })
            logger.logLevel = .warning
            return logger
        }()
        /// The event loops serving connections; default the shared singleton. Benchmarks give the server loops of its
        /// own, so that clients never share a thread with it.
        public var eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton

        /// Creates the default configuration.
        public init() {}
    }

    // MARK: - Mutable State

    struct State {
        /// The listening channel while started. Protected by `state`'s lock.
        var serverChannel: (any Channel)?
        /// The bound port (kept across `stop()` so `start()` can rebind it). Protected by `state`'s lock.
        var port: Int?
        /// Open connections (the WebSocket upgrade done). Protected by `state`'s lock.
        var connections: [ObjectIdentifier: ServerConnection] = [:]
        /// How each `connect` ended, in order (``DDPTestServer/connectOutcomes``). Protected by `state`'s lock.
        var connectOutcomes: [ConnectOutcome] = []
        /// Sessions that ended because their grace period's queue overflowed. Protected by `state`'s lock.
        var gracePeriodOverflows = 0
        /// The headers of every upgrade request, in arrival order. Protected by `state`'s lock.
        var upgradeRequestHeaders: [HTTPHeaders] = []
        /// Runs of each method call, by "session id" (``DDPTestServer/runs(ofCall:inSession:)``). Protected by
        /// `state`'s lock.
        var callRuns: [String: Int] = [:]
        /// Whether new connections are closed at once. Protected by `state`'s lock.
        var refusesNewConnections = false
        /// Whether sessions answer client pings. Protected by `state`'s lock.
        var respondsToPings = true
        /// Every client message received, in order, over all sessions. Protected by `state`'s lock.
        var receivedMessages: [ClientMessage] = []
        /// Connections accepted so far. Protected by `state`'s lock.
        var acceptedConnections = 0
        /// Tasks waiting for a matching client message. Protected by `state`'s lock.
        var messageWaiters: [MessageWaiter] = []
        /// Tasks waiting until no session is left. Protected by `state`'s lock.
        var noSessionWaiters: [CheckedContinuation<Void, Never>] = []
        /// Protected by `state`'s lock.
        var methodLatency: Duration = .zero
        /// Protected by `state`'s lock.
        var subscriptionLatency: Duration = .zero
        /// Protected by `state`'s lock.
        var sendsResultBeforeData = false
        /// Protected by `state`'s lock.
        var republishesAfterLogin: Duration?
    }

    struct MessageWaiter {
        let predicate: @Sendable (ClientMessage) -> Bool
        let continuation: CheckedContinuation<ClientMessage, Never>
    }

    let state = NIOLockedValueBox(State())
    private let deflateStatistics = NIOLockedValueBox(PerMessageDeflateStatistics())

    /// What permessage-deflate did on this server's connections so far.
    public var perMessageDeflateStatistics: PerMessageDeflateStatistics { deflateStatistics.withLockedValue { $0 } }
    let configuration: Configuration
    /// The serial queue that owns every DDP session, collection and handler.
    public let queue = DispatchQueue(label: "DDPTestServer")
    /// Collections by name. Confined to `queue`.
    var collections: [String: ServerCollection] = [:]
    /// Publication handlers by name. Confined to `queue`.
    var publications: [String: PublicationHandler] = [:]
    /// Method handlers by name. Confined to `queue`.
    var methods: [String: MethodHandler] = [:]
    /// Methods whose calls wait until ``releaseHeldMethods()``. Confined to `queue`.
    var heldMethodNames: Set<String> = []
    /// The calls waiting, in arrival order, each resuming its session. Confined to `queue`.
    var heldMethodCalls: [() -> Void] = []
    /// Observers of every document change. Confined to `queue`.
    var documentChangeObservers: [@Sendable (_ collection: String, _ id: String, _ after: EJSONObject?) -> Void] = []
    /// Sessions by id, connected or in their grace period. Confined to `queue`.
    var liveSessions: [String: ServerSession] = [:]
    /// Tasks waiting until no session has a message waiting or running (``waitUntilSessionsIdle()``). Confined to
    /// `queue`.
    var idleWaiters: [CheckedContinuation<Void, Never>] = []
    /// Users' password hashes and login tokens. Confined to `queue`.
    var accounts = ServerAccounts()
    /// The rate limits (DDPRateLimiter's rules). Confined to `queue`.
    var rateLimiter = RateLimiter()
    /// Extra delay before every method runs (for the demo's `--latency`).
    public var methodLatency: Duration {
        get { state.withLockedValue { $0.methodLatency } }
        set { state.withLockedValue { $0.methodLatency = newValue } }
    }
    /// Extra delay before every subscription starts (its data and `ready` come that much later; messages after it in
    /// the session wait too, as behind a slow publication).
    public var subscriptionLatency: Duration {
        get { state.withLockedValue { $0.subscriptionLatency } }
        set { state.withLockedValue { $0.subscriptionLatency = newValue } }
    }
    /// When `true`, methods send `result` before their data and `updated` (a method that returns before its writes).
    public var sendsResultBeforeData: Bool {
        get { state.withLockedValue { $0.sendsResultBeforeData } }
        set { state.withLockedValue { $0.sendsResultBeforeData = newValue } }
    }
    /// When set, a method that logs a user in (or out) sends its `updated` and `result` first and re-runs the
    /// session's publications that long after, as a Meteor 3 server does (`_setUserId` restarts them without waiting):
    /// the logged-in user's document reaches the client after the login's result. `nil` (the default) re-runs them
    /// inside the method's write fence, before `updated`, as Meteor 2 did.
    public var republishesAfterLogin: Duration? {
        get { state.withLockedValue { $0.republishesAfterLogin } }
        set { state.withLockedValue { $0.republishesAfterLogin = newValue } }
    }
    /// How long a publication that returned no cursor may go without calling ``PublicationContext/ready()`` before
    /// the server logs a warning (at `.warning`, on ``Configuration/logger``). One second.
    let readyWarningDelay: Duration = .seconds(1)
    let group: any EventLoopGroup
    let logger: Logger

    /// Creates a server; it listens once ``start()`` returns.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.group = configuration.eventLoopGroup
        self.logger = configuration.logger
        queue.sync { registerAccountMethods() }
    }

    // MARK: - Data, publications and methods

    /// Runs `body` on the server queue and returns its result (for setting up and inspecting data from tests).
    @discardableResult
    public func perform<T>(_ body: () throws -> T) rethrows -> T {
        try queue.sync(execute: body)
    }

    /// The collection named `name`, created on first use with Meteor's `/<name>/insert|update|remove` methods.
    /// Call it on the server queue (inside ``perform(_:)`` or a handler).
    ///
    /// - Parameters:
    ///   - name: The collection's name.
    ///   - idGeneration: How its inserts make ids (Meteor's `idGeneration`; `.objectID` is `'MONGO'`), set by the
    ///     call that creates the collection.
    public func collection(_ name: String, idGeneration: IDGeneration = .string) -> ServerCollection {
        dispatchPrecondition(condition: .onQueue(queue))
        if let existing = collections[name] { return existing }
        let created = ServerCollection(name: name, server: self, idGeneration: idGeneration)
        collections[name] = created
        registerCollectionMethods(name)
        return created
    }

    /// Defines a publication. The handler runs on the server queue for every subscription (again after a login or
    /// logout). Call from any thread.
    public func publish(_ name: String, _ handler: @escaping PublicationHandler) {
        queue.sync { publications[name] = handler }
    }

    /// Defines a method. The handler runs on the server queue, in order per session. Call from any thread.
    public func method(_ name: String, _ handler: @escaping MethodHandler) {
        queue.sync { methods[name] = handler }
    }

    /// Holds calls of the methods named: each waits, with everything its session sends after it, until
    /// ``releaseHeldMethods()`` (a server that answers slowly, without holding its queue: other sessions and the
    /// server's own writes go on). Call from any thread.
    public func holdMethods(named names: Set<String>) {
        queue.sync { heldMethodNames = names }
    }

    /// Stops holding methods and runs the held calls, in the order they arrived. Call from any thread.
    public func releaseHeldMethods() {
        queue.async { [self] in
            heldMethodNames = []
            let calls = heldMethodCalls
            heldMethodCalls = []
            for call in calls { call() }
        }
    }

    /// Calls `observer` on the server queue after every change of a document of any collection, with the document's
    /// new fields (`nil`: removed), before the change goes out to the sessions. Call from any thread.
    public func observeDocumentChanges(
        _ observer: @escaping @Sendable (_ collection: String, _ id: String, _ after: EJSONObject?) -> Void
    ) {
        queue.sync { documentChangeObservers.append(observer) }
    }

    func publicationHandler(_ name: String) -> PublicationHandler? { publications[name] }
    func methodHandler(_ name: String) -> MethodHandler? { methods[name] }

    /// A document changed: every session's cursor publications follow.
    func documentChanged(collection: String, id: String, before: EJSONObject?, after: EJSONObject?) {
        dispatchPrecondition(condition: .onQueue(queue))
        for observer in documentChangeObservers { observer(collection, id, after) }
        for session in liveSessions.values {
            session.collectionChanged(collection: collection, id: id, before: before, after: after)
        }
    }

    private func registerCollectionMethods(_ name: String) {
        methods["/\(name)/insert"] = { context in
            guard case .object(let document)? = context.params.first else {
                throw MeteorError(error: .number(400), reason: "Match failed")
            }
            let collection = context.collection(name)
            let id = MongoID.givenID(of: document) ?? collection.idGeneration.newID(in: context, collection: name)
            try collection.insert(document, id: MongoID.stringify(id))
            return id
        }
        // Clients are untrusted code (Meteor's allow-deny): they may update and remove by id only; the collection is
        // "insecure" otherwise (upserts and modifiers of every kind are allowed).
        methods["/\(name)/update"] = { context in
            guard context.params.count > 1 else { throw MeteorError(error: .number(400), reason: "Match failed") }
            guard MongoModifier.documentID(inSelector: context.params[0]) != nil else {
                throw MeteorError(
                    error: .number(403), reason: "Not permitted. Untrusted code may only update documents by ID.")
            }
            let options = context.params.count > 2 ? context.params[2].objectValue ?? [:] : [:]
            let collection = context.collection(name)
            let (count, insertedID) = try collection.upsert(
                selector: context.params[0], context.params[1], options: options
            ) { collection.idGeneration.newID(in: context, collection: name) }
            // Mongo.Collection's `update` with `_returnObject` (what a client's `upsertAsync` asks for).
            guard options["_returnObject"]?.isTruthy == true else { return .number(Double(count)) }
            var result: EJSONObject = ["numberAffected": .number(Double(count))]
            if let insertedID { result["insertedId"] = insertedID }
            return .object(result)
        }
        methods["/\(name)/remove"] = { context in
            guard let selector = context.params.first else {
                throw MeteorError(error: .number(400), reason: "Match failed")
            }
            guard MongoModifier.documentID(inSelector: selector) != nil else {
                throw MeteorError(
                    error: .number(403), reason: "Not permitted. Untrusted code may only remove documents by ID.")
            }
            return .number(Double(try context.collection(name).remove(selector: selector)))
        }
    }

    // MARK: - Starting and stopping

    /// Binds and starts listening. After a ``stop()``, binds the same port again (a "server restart").
    public func start() async throws {
        let port = state.withLockedValue { $0.port } ?? configuration.port
        let sslContext = try configuration.tls.map { try NIOSSLContext(configuration: $0) }
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { [weak self] channel in
                guard let self else { return channel.close() }
                return self.initialize(channel, sslContext: sslContext)
            }
        let channel = try await bootstrap.bind(host: configuration.host, port: port).get()
        let boundPort = channel.localAddress?.port ?? port
        state.withLockedValue {
            $0.serverChannel = channel
            $0.port = boundPort
        }
        logger.debug("listening", metadata: ["port": "\(boundPort)"])
    }

    /// Stops listening and closes every connection (clients see the connection drop).
    public func stop() async throws {
        let channel = state.withLockedValue { state in
            defer { state.serverChannel = nil }
            return state.serverChannel
        }
        try await channel?.close()
        dropAllConnections()
        // A stopped server keeps no session for a client to resume.
        endSessionsInGracePeriod()
    }

    /// The port the server listens on (valid after ``start()``).
    public var port: Int { state.withLockedValue { $0.port } ?? configuration.port }

    /// The WebSocket URL clients connect to: `ws://127.0.0.1:<port>/websocket` (or `wss://`).
    public var url: URL {
        URL(string: "\(configuration.tls == nil ? "ws" : "wss")://\(configuration.host):\(port)/websocket")!
    }

    // MARK: - Pipeline

    private func initialize(_ channel: any Channel, sslContext: NIOSSLContext?) -> EventLoopFuture<Void> {
        let refuse = state.withLockedValue { state -> Bool in
            state.acceptedConnections += 1
            return state.refusesNewConnections
        }
        if refuse { return channel.close() }
        let maxFrameSize = configuration.maxFrameSize
        let deflates = configuration.permessageDeflate
        let deflateStatistics = self.deflateStatistics
        let required = configuration.requiredUpgradeHeaders
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: maxFrameSize,
            shouldUpgrade: { [weak self] channel, head in
                self?.state.withLockedValue { $0.upgradeRequestHeaders.append(head.headers) }
                guard head.uri.hasPrefix("/websocket"), Self.carries(required, head.headers) else {
                    return channel.eventLoop.makeSucceededFuture(nil)
                }
                var headers = HTTPHeaders()
                if deflates, let agreement = PerMessageDeflateAgreement(requestHeaders: head.headers) {
                    headers.add(name: "Sec-WebSocket-Extensions", value: agreement.responseHeader)
                }
                return channel.eventLoop.makeSucceededFuture(headers)
            },
            upgradePipelineHandler: { [weak self] channel, head in
                guard let self else { return channel.close() }
                let connection = ServerConnection(server: self, channel: channel)
                return channel.pipeline.removeHandler(name: NotFoundResponder.name).flatMapThrowing {
                    if deflates, let agreement = PerMessageDeflateAgreement(requestHeaders: head.headers) {
                        try channel.pipeline.syncOperations.addHandler(
                            PerMessageDeflateHandler(
                                agreement: agreement, maxMessageSize: maxFrameSize, statistics: deflateStatistics)
                        )
                    }
                    try channel.pipeline.syncOperations.addHandler(
                        NIOWebSocketFrameAggregator(
                            minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 1 << 16,
                            maxAccumulatedFrameSize: maxFrameSize)
                    )
                    try channel.pipeline.syncOperations.addHandler(ServerConnectionHandler(connection: connection))
                }
            }
        )
        return channel.eventLoop.makeCompletedFuture {
            if let sslContext {
                try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
            }
        }.flatMap {
            channel.pipeline.configureHTTPServerPipeline(
                withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
        }.flatMapThrowing {
            // A request that is not an upgrade to /websocket gets a 404, as a web server answers it.
            try channel.pipeline.syncOperations.addHandler(
                NotFoundResponder(requiredHeaders: required), name: NotFoundResponder.name)
        }
    }

    func register(_ connection: ServerConnection) {
        state.withLockedValue { $0.connections[ObjectIdentifier(connection)] = connection }
    }

    func unregister(_ connection: ServerConnection) {
        let waiters: [CheckedContinuation<Void, Never>] = state.withLockedValue { state in
            state.connections.removeValue(forKey: ObjectIdentifier(connection))
            guard state.connections.isEmpty else { return [] }
            defer { state.noSessionWaiters.removeAll() }
            return state.noSessionWaiters
        }
        // Behind everything the closed sessions handed the server's queue (their frames arrive before their close).
        guard !waiters.isEmpty else { return }
        queue.async { for waiter in waiters { waiter.resume() } }
    }

    /// Returns once no session is open and the server's queue has run what the closed ones handed it (every frame
    /// they received is handled); at once if none is open. No polling.
    public func waitUntilNoSession() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let none: Bool = state.withLockedValue { state in
                guard !state.connections.isEmpty else { return true }
                state.noSessionWaiters.append(continuation)
                return false
            }
            if none { queue.async { continuation.resume() } }
        }
    }

    func record(_ message: ClientMessage) {
        let satisfied: [MessageWaiter] = state.withLockedValue { state in
            state.receivedMessages.append(message)
            let (matching, rest) = state.messageWaiters.reduce(into: ([MessageWaiter](), [MessageWaiter]())) {
                result, waiter in
                if waiter.predicate(message) { result.0.append(waiter) } else { result.1.append(waiter) }
            }
            state.messageWaiters = rest
            return matching
        }
        for waiter in satisfied { waiter.continuation.resume(returning: message) }
    }

    /// Returns the first client message received so far that matches, or waits for one (no polling).
    @discardableResult
    public func waitForMessage(where predicate: @escaping @Sendable (ClientMessage) -> Bool) async -> ClientMessage {
        await withCheckedContinuation { continuation in
            let existing: ClientMessage? = state.withLockedValue { state in
                if let found = state.receivedMessages.first(where: predicate) { return found }
                state.messageWaiters.append(MessageWaiter(predicate: predicate, continuation: continuation))
                return nil
            }
            if let existing { continuation.resume(returning: existing) }
        }
    }
}

/// Answers every plain HTTP request (one the WebSocket upgrader declined) with 404 and closes the connection.
private final class NotFoundResponder: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    // @unchecked because `unauthorized` is confined to the channel's event loop.
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    static let name = "DDPTestServer.NotFoundResponder"

    /// Headers an upgrade must carry (``DDPTestServer/Configuration/requiredUpgradeHeaders``).
    let requiredHeaders: [String: String]
    /// Whether the request being read lacks them.
    private var unauthorized = false

    init(requiredHeaders: [String: String]) {
        self.requiredHeaders = requiredHeaders
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if case .head(let head) = part { unauthorized = !DDPTestServer.carries(requiredHeaders, head.headers) }
        guard case .end = part else { return }
        let status: HTTPResponseStatus = unauthorized ? .unauthorized : .notFound
        let body = unauthorized ? "authentication required\n" : "DDP is served at /websocket\n"
        var headers = HTTPHeaders()
        headers.add(name: "Content-Length", value: "\(body.utf8.count)")
        headers.add(name: "Connection", value: "close")
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))),
            promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in context.close(promise: nil) }
    }
}
