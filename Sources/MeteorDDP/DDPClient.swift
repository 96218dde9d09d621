import Atomics
import CoreMetrics
import DequeModule
import Dispatch
import EJSON
import Foundation
import Logging
import NIOConcurrencyHelpers

extension Notification.Name {
    /// Posted by a ``DDPClient`` (the notification's `object`) whenever its ``ConnectionStatus`` changes;
    /// the status is in `userInfo[DDPClient.statusUserInfoKey]`. Posted on the client's callback queue, in order.
    public static let ddpClientStatusDidChange = Notification.Name("MeteorDDP.DDPClient.statusDidChange")
}

/// A connection to a Meteor server speaking DDP.
///
/// For example:
/// ```swift
/// let client = DDPClient(url: URL(string: "wss://example.com/websocket")!)
/// try await client.connect(timeout: .seconds(10))   // throws with the reason when it cannot connect
/// ```
///
/// ## Concurrency
/// - **Serial client queue**: connection state, heartbeats and timers are owned by one serial queue; every public
///   method may be called from any thread or task and hops onto it.
/// - **Parsing off the queue**: frames are parsed on the transport's thread, then handed to the client queue
///   in arrival order.
/// - **Callbacks**: ``statusUpdates`` and ``errors`` are async sequences; `ddpClientStatusDidChange`,
///   method completions and subscription waiters run on the client's serial *callback queue*, never on the client
///   queue or under a lock, so they may call back into the client. docs/ARCHITECTURE.md lists where each callback runs.
///
/// ## Non-Reentrancy
/// Every public API of the client, its collections, subscriptions, relationships and accounts may be called from any
/// callback, from a stub, and inside ``Database/performUpdates(_:)``, on any thread, without deadlock. Inside the app's
/// own `performUpdates` the client queue may be waiting for the write lock the caller holds, so no API waits for it
/// there:
/// - ``call(_:params:options:completion:)``, the collections' `insert`/`update`/`remove` and
///   ``subscribe(_:params:notInUseTimeout:)`` are made when the transaction commits, on the same thread, in the order
///   they were made (the call then returns `nil` for its stub value; `subscribe` returns a handle bound at the
///   commit, whose ``Subscription/stop()``, ``Subscription/ready()`` and status work at once);
/// - the async APIs (`call`'s `async` form, logins, `logout()`, relationship writes, `ready()`) are started from the
///   (synchronous) transaction in a task of their own, which the transaction does not wait for;
/// - everything else (`connect()`, `disconnect()`, `close()`, reads of status, account and the cache, live queries
///   and observable models) hands its work to the client queue without waiting.
///
/// `EveryAPIInsideATransactionTests` calls every API family inside a transaction while the client queue's stub waits
/// for its lock; `ReentrancySuiteTests` calls every API from every kind of callback.
public final class DDPClient: @unchecked Sendable {
    // @unchecked because all mutable state below is confined to `queue` (checked with dispatchPrecondition),
    // except `publishedStatus`, which is protected by its own lock.

    /// The key of the ``ConnectionStatus`` in a `ddpClientStatusDidChange` notification.
    public static let statusUserInfoKey = "status"

    /// The serial queue that owns the client's state.
    let queue: DispatchQueue
    let configuration: Configuration
    let transport: any Transport
    let scheduler: any DDPScheduler
    let logger: Logger
    /// Bounds the lines a flood of frames or of protocol violations logs.
    let logThrottle: LogThrottle
    /// The client's swift-metrics.
    let metrics: ClientMetrics
    /// The last errors reported, for ``diagnostics()``.
    let recentErrors = NIOLockedValueBox(Deque<ClientDiagnostics.RecordedError>())
    /// Frames and bytes read, counted by the reader, reported by the client queue.
    let receivedTraffic = ReceivedTraffic()

    // MARK: - Mutable State (confined to `queue`)

    /// The connection, heartbeat and session state (``ClientCore``). Confined to `queue`.
    ///
    /// Its setter is private to this file, whose only write is ``decide(_:)``: the rest of the client reads the core
    /// and hands it inputs, and the compiler refuses any other write.
    ///
    /// Swift's run-time exclusivity checks stay on, in release builds too: a stub (app code on this queue) may call
    /// any API, and a check is what turns a re-entrant modification into a trap instead of corrupt state. Since every
    /// input is one short core event, a frame costs a few checks; an interleaved A/B of the ingest benchmark showed no
    /// difference from exempting the core (`@exclusivity(unchecked)`, which the client had before the core existed).
    private(set) var core: ClientCore
    /// The newest transport connection; events from older ones are ignored. Confined to `queue`.
    var connection: (any TransportConnection)?
    /// Pending timers by purpose, each with the generation that makes late firings harmless. Confined to `queue`.
    var timers: [ClientCore.Timer: (generation: Int, action: any ScheduledAction)] = [:]
    /// Logins waiting for their user's document (``awaitUserDocument(of:_:)``), by token. Confined to the client queue.
    var userDocumentWaits: [Int: UserDocumentWait] = [:]
    /// The next such wait's token. Confined to the client queue.
    var nextUserDocumentWait = 0
    /// ``waitForPendingWrites()``'s waiters by token (the core keeps what each waits for). Confined to the client
    /// queue.
    var pendingWritesWaiters: [Int: @Sendable (Result<Void, any Error>) -> Void] = [:]
    /// When the client last handled frames (on the scheduler's clock), for ``willEnterForeground()``'s staleness
    /// rule. Confined to the client queue.
    var lastFramesHandledAt: Date?
    /// Start times and counts behind the metrics' latencies and gauges.
    var metricTimings = MetricTimings()
    /// The last token a ``waitForPendingWrites()`` took.
    let pendingWritesTokens = ManagedAtomic(0)
    /// Confined to `queue`.
    var timerGeneration = 0

    /// Method stubs by name, readable from any thread. Protected by its lock.
    let stubs = NIOLockedValueBox<[String: MethodStub]>([:])
    /// How each declared collection makes ids (``collection(_:idGeneration:)``). Protected by its lock.
    let idGenerations = NIOLockedValueBox<[String: IDGeneration]>([:])
    /// The local cache: every document of every subscription, plus the effects of pending stubs.
    public let database: Database
    /// Server updates on their way into ``database``, in batches.
    let updateBuffer: DataUpdateBuffer
    /// The local cache as the session feeds it.
    let store: any LocalStore
    /// Where completion handlers and result callbacks run (serial, so they run in completion order).
    let userCode: UserCodeQueue
    /// The serial queue ``userCode`` runs on (tests wait for it).
    var callbackQueue: DispatchQueue { userCode.queue }
    /// Makes subscription ids (Meteor's `Random.id()`), cryptographically secure.
    let randomGenerator = SecureRandomGenerator()
    /// The core's login state as other threads read it (``account``, ``loggingIn``, ``logoutReason``): copied by
    /// ``decide(_:)`` whenever a decision changed it. Protected by its lock.
    let publishedLogin = NIOLockedValueBox(LoginState.Published())
    /// The ``LoginState/version`` last copied into ``publishedLogin``. Confined to the client queue.
    var publishedLoginVersion = 0
    let accountBroadcaster = Broadcaster<Account?>(bufferLimit: 16, current: nil)
    let loginEventBroadcaster = Broadcaster<LoginEvent>(bufferLimit: 64)
    /// The offline store at work (``Configuration/persistence``), if any.
    let persistence: ClientPersistence?
    /// What the client found in its offline store when it was created (empty without persistence).
    public let restoreReport: RestoreReport
    /// Identifies the client queue, so work already on it runs inline instead of deadlocking.
    static let queueKey = DispatchSpecificKey<ObjectIdentifier>()

    /// Parsed frames and transport events on their way to the client queue.
    let inbox: IncomingInbox
    /// The ids of the calls sent and not yet complete: added before a call's frame is sent (``send(calls:)``),
    /// removed when it completes. Read on the transport's thread: a `result` or `updated` for none of them completes
    /// nothing, so it is batched like data instead of handed over at once (a server flooding them cost the client a
    /// queue hop per frame). Protected by its lock.
    /// Each with the task awaiting it, if one does (``CallWaiter``).
    let awaitedCalls = NIOLockedValueBox<[String: CallWaiter?]>([:])
    /// A test's hook, run on the transport's thread when the frames not handled yet reach their bound
    /// (``IncomingInbox/backlogLimit``).
    let backlogBoundHook = NIOLockedValueBox<(@Sendable () -> Void)?>(nil)
    /// While a task drains the inbox for its call (``CallWaiter``): completions of awaited calls, resumed by that task
    /// once it has left the client queue (a resumed caller that calls again at once then finds the queue free).
    /// Confined to the client queue.
    var deferredCompletions: [@Sendable () -> Void]?
    /// While the client queue drains the inbox: the errors reported meanwhile, published on ``errors`` together when
    /// the drain ends, or whenever ``errorsBufferLimit`` of them wait (a flood of bad frames wakes a consumer once per
    /// batch, not per error). So the errors a batch of frames causes reach ``errors`` after the completions and
    /// status changes the batch made. Confined to the client queue.
    var reportsOfThisDrain: [DDPError]?
    /// The last published status, readable from any thread. Protected by its lock.
    let publishedStatus = NIOLockedValueBox(ConnectionStatus(state: .offline))
    /// Why the last connection attempt failed or the last connection was lost (`connect(timeout:)` says it).
    let lastConnectionFailure = NIOLockedValueBox<DDPError?>(nil)
    /// The negotiated DDP version, published after every connection event so any thread reads it without waiting
    /// for the client queue.
    let publishedVersion = NIOLockedValueBox<DDPVersion?>(nil)
    let statusBroadcaster = Broadcaster<ConnectionStatus>(bufferLimit: 64, current: ConnectionStatus(state: .offline))
    let errorBroadcaster = Broadcaster<DDPError>(bufferLimit: DDPClient.errorsBufferLimit)
    /// How many errors a consumer of ``errors`` that falls behind keeps (the newest).
    static let errorsBufferLimit = 256

    // MARK: - Starting

    /// Creates a client for a Meteor server's WebSocket URL (for example `wss://example.com/websocket`), or its
    /// web address as `DDP.connect` takes it (`https://example.com` connects to `wss://example.com/websocket`; see
    /// ``ServerURL``). It does not connect until ``connect()``.
    public convenience init(
        url: URL, configuration: Configuration = Configuration(), webSocket: WebSocketTransport.Configuration = .init()
    ) {
        let url = ServerURL.translating(url)
        // The WebSocket library logs every frame at `.trace`, unthrottled: the client logs its frames itself
        // (at most 100 of a kind a second, ``LogThrottle``), so the transport logs from `.debug` up.
        var transportLogger = configuration.logger
        if transportLogger.logLevel < .debug { transportLogger.logLevel = .debug }
        self.init(
            transport: WebSocketTransport(url: url, configuration: webSocket, logger: transportLogger),
            configuration: configuration)
    }

    /// Creates a client over any ``Transport`` (for example an `InMemoryTransport` in tests).
    ///
    /// With ``Configuration/persistence`` set, this reads the store on the calling thread (the cache is complete when
    /// it returns: about 0.3 s for 100,000 small documents; create big clients off the main thread).
    public init(transport: any Transport, configuration: Configuration = Configuration()) {
        let queue = DispatchQueue(label: "MeteorDDP.DDPClient")
        self.queue = queue
        self.configuration = configuration
        self.transport = transport
        let scheduler = configuration.scheduler ?? DispatchScheduler(queue: queue)
        self.scheduler = scheduler
        self.logger = configuration.logger
        let metrics = ClientMetrics(
            factory: configuration.metricsFactory ?? MetricsSystem.factory, label: configuration.metricsLabel)
        self.metrics = metrics
        let logThrottle = LogThrottle(scheduler: scheduler, logger: configuration.logger)
        self.logThrottle = logThrottle
        self.core = ClientCore(configuration: configuration)
        self.userCode = UserCodeQueue(label: "MeteorDDP.DDPClient.callbacks")
        self.inbox = IncomingInbox(holdLimit: configuration.maxMessagesHeldForQuiescence)
        let database = Database(logger: configuration.logger, logThrottle: logThrottle, metrics: metrics.database)
        self.database = database
        self.updateBuffer = DataUpdateBuffer(
            database: database,
            interval: configuration.bufferedWritesInterval,
            maxAge: configuration.bufferedWritesMaxAge,
            maxBatchSize: configuration.bufferedWritesMaxBatchSize,
            scheduler: configuration.scheduler
        )
        self.store = DatabaseLocalStore(database: database, buffer: updateBuffer)
        let (persistence, storedState, report) = ClientPersistence.open(configuration.persistence)
        self.persistence = persistence
        if metrics.isRecording { persistence?.writer.recordMetrics(metrics) }
        self.restoreReport = report
        queue.setSpecific(key: DDPClient.queueKey, value: ObjectIdentifier(self))
        if let persistence { restore(storedState, into: persistence) }
        restoreStoredAccount()
    }

    deinit {
        connection?.close()
        for (_, timer) in timers { timer.action.cancel() }
        statusBroadcaster.finish()
        errorBroadcaster.finish()
        accountBroadcaster.finish()
        loginEventBroadcaster.finish()
    }

    // MARK: - Observing

    /// The current connection status.
    public var status: ConnectionStatus { publishedStatus.withLockedValue { $0 } }

    /// The status now and every change after it.
    public var statusUpdates: ConnectionStatusUpdates {
        ConnectionStatusUpdates(stream: statusBroadcaster.makeStream())
    }

    /// Errors the client reported and survived, from now on.
    public var errors: DDPErrors { DDPErrors(stream: errorBroadcaster.makeStream()) }

    /// The DDP version negotiated for the current session, if connected.
    public var negotiatedVersion: DDPVersion? { publishedVersion.withLockedValue { $0 } }

    /// The one write of the core: hands it `input` and returns what it decided, for `run(_:)`
    /// (DDPClient+Actions.swift). On the client queue.
    @inline(__always)
    func decide(_ input: consuming ClientCore.Input) -> [ClientCore.Action] {
        let actions = core.handle(input)
        if core.login.version != publishedLoginVersion {
            // Before the actions run: a notification of the new account finds it published.
            publishedLoginVersion = core.login.version
            let published = core.login.published
            publishedLogin.withLockedValue { $0 = published }
        }
        return actions
    }
}

// MARK: - Configuration

extension DDPClient {
    /// How a ``DDPClient`` behaves. The defaults are Meteor's.
    public struct Configuration: Sendable {
        /// The DDP versions to support, in order of preference. Default `["1", "pre2", "pre1"]`.
        public var supportedVersions: [DDPVersion] = DDPVersion.supported
        /// Silence after which a ping is sent (Meteor: 17.5 s). Zero disables heartbeats.
        public var heartbeatInterval: Duration = .milliseconds(17_500)
        /// How long to wait for any message after a ping (Meteor: 15 s).
        public var heartbeatTimeout: Duration = .seconds(15)
        /// How long a connection attempt may take, socket and DDP handshake together (Meteor: 10 s).
        public var connectTimeout: Duration = .seconds(10)
        /// Reconnect back-off (Meteor's `Retry` defaults).
        public var retryStrategy: RetryStrategy = .meteorDefault
        /// Whether a new socket asks the server to resume the session the client had (Meteor 3.5+, on by default):
        /// resumed, nothing is sent or downloaded again; refused (a server before 3.5, a grace period run out, a
        /// message lost with the old socket), the client starts a new session as it always does.
        /// ``ConnectionStatus/sessionStart`` says which happened.
        public var resumesSessions = true
        /// How long a call in flight when the session is resumed may take to be answered before it fails as
        /// ``MethodError/Kind/outcomeUnknown`` (default 30 s): its frame may have been lost with the old socket, and
        /// sending it again could run it twice.
        public var resumedCallTimeout: Duration = .seconds(30)
        /// What the client does while the app is in the background (``DDPClient/didEnterBackground()``); default
        /// ``BackgroundPolicy/keepConnection``: nothing changes while the OS lets the process run.
        public var backgroundPolicy = BackgroundPolicy.keepConnection
        /// When the app comes back (``DDPClient/willEnterForeground()``), how long a socket that heard nothing for
        /// longer than ``heartbeatInterval`` has to answer a ping before it is replaced (default 2 s).
        public var foregroundPingTimeout: Duration = .seconds(2)
        /// How long a call may take, stub to completion, unless its ``MethodOptions/timeout`` says otherwise; `nil`
        /// (the default, as in Meteor): no deadline. A call past it fails with ``MethodError/Kind/timedOut``. The
        /// client's own logins never take it (a slow server must not log the user out).
        public var callTimeout: Duration?
        /// Whether server pings are answered (Meteor: yes).
        public var respondToPings = true
        /// Where the client logs: frames at `.trace`, connection events at `.debug`, retries and logouts at `.info`.
        /// Secrets (passwords, tokens, codes) are never logged: method parameters and results are redacted at every
        /// level unless the method is in ``methodsWithLoggableParams``. Default: discards everything.
        public var logger = Logger(label: "MeteorDDP", factory: { _ in SwiftLogNoOpLogHandler() })
        /// Methods whose parameters and results may appear in the log (in sent and received frames, at `.trace`), for
        /// debugging. Empty by default: every method's parameters and results are redacted, since any of them may
        /// carry a secret.
        public var methodsWithLoggableParams: Set<String> = []
        /// How long incoming data waits for more before it is applied as one batch (Meteor: 5 ms); zero applies it
        /// as soon as the client gets to it.
        public var bufferedWritesInterval: Duration = .milliseconds(5)
        /// The longest incoming data waits after the first update of a batch (Meteor: 500 ms).
        public var bufferedWritesMaxAge: Duration = .milliseconds(500)
        /// The number of incoming updates at which a batch is applied without waiting for the two bounds above
        /// (ours, not Meteor's): on a flood the cache applies one batch while the next is decoded. Default
        /// ``DataUpdateBuffer/defaultMaxBatchSize`` (16,384).
        public var bufferedWritesMaxBatchSize = DataUpdateBuffer.defaultMaxBatchSize
        /// Where the logged-in account is kept between runs; `nil` keeps it in memory only.
        /// ``FileAccountStore`` keeps it in a 0600 file in the application-support directory.
        public var accountStore: (any AccountStore)?
        /// How long a login waits, after its result and `updated`, for the server to publish the user's document to
        /// this client (Meteor 3 restarts the user's publication after the login's `updated`): a login returns, emits
        /// ``LoginEvent/loggedIn(_:type:)`` and clears ``DDPClient/loggingIn`` only once that document is in the cache,
        /// as Meteor's client waits for `Meteor.user()`. Past it the login throws ``AccountError`` of kind
        /// ``AccountError/Kind/userDocumentNotReceived`` (the server did log the user in; the account stays set).
        /// Meteor waits forever; default 30 s.
        public var loginUserDocumentTimeout: Duration = .seconds(30)
        /// The scheduler for timers; `nil` uses real time on the client queue. Tests pass a `ManualScheduler`.
        public var scheduler: (any DDPScheduler)?
        /// Most data messages held while waiting for quiescence (after a reconnect, until every revived subscription
        /// is ready and every re-sent method has its `updated`; or while a `wait` method runs). Default 50,000.
        /// A server that never sends `ready` or `updated` would otherwise make the hold grow forever. At the limit the
        /// client stops waiting: it applies what it holds at once, as if quiescence had come, reports
        /// ``DDPError/Code/limitReached`` on ``DDPClient/errors``, and processes later data as it comes. The cache
        /// still ends equal to the server's data; documents sent after the limit may be removed and added back
        /// (notifications a complete hold would have spared). The same limit bounds the messages held while the app's
        /// ``DDPClient/onReconnect(_:_:)`` hooks run; at it the client re-sends methods and subscriptions without
        /// waiting for the hooks (and reports ``DDPError/Code/limitReached``).
        public var maxMessagesHeldForQuiescence = 50_000
        /// Most documents cached, in all, for collections the app never declared with
        /// ``DDPClient/collection(_:idGeneration:)``. Default 100,000. Past it, the server's new documents for
        /// undeclared collections are dropped and ``DDPError/Code/limitReached`` is reported once per collection;
        /// declared collections have no limit (their data is the app's). See ``DDPClient/collection(_:idGeneration:)``.
        public var maxDocumentsInUndeclaredCollections = 100_000
        /// Where the cache and unanswered calls are kept between launches (``Persistence/sqlite(at:)``); `nil`
        /// (the default) keeps everything in memory. See ``Persistence``.
        public var persistence: Persistence?
        /// Refuse frames holding a custom EJSON type nobody registered with `EJSONTypeRegistry` (Meteor's
        /// `Custom EJSON type X is not defined`: the frame is reported as malformed and skipped; a call or
        /// subscription it answers fails). Off by default: such values are kept as
        /// `EJSONValue.custom(type:value:)` with their name and raw value, written back as they were read.
        public var refusesUnregisteredEJSONTypes = false
        /// What the cache shows for a document a pending call's stub wrote when the server's data for it changes
        /// before the call is done: ``PendingStubMode/holdServerData`` (Meteor's rule, the default) or
        /// ``PendingStubMode/rebase`` (the server's newest version with the pending stubs replayed over it).
        public var pendingStubMode: PendingStubMode = .holdServerData
        /// Where the client's swift-metrics go (the DocC article "Metrics" lists them); `nil` (the default) takes the
        /// process's `MetricsSystem.factory`, which records nothing until the app bootstraps a backend. The metrics are
        /// made when the client is: bootstrap first.
        public var metricsFactory: (any MetricsFactory)?
        /// A `client` dimension for this client's metrics, to tell clients of one process apart; `nil` (the default):
        /// none, so a thousand clients in a process share one series per metric.
        public var metricsLabel: String?

        /// Creates the default configuration.
        public init() {}
    }
}
