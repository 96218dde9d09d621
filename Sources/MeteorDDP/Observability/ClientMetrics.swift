import Atomics
import CoreMetrics
import DequeModule
import Dispatch
import EJSON
import NIOPosix

/// The client's swift-metrics: made once per client from ``DDPClient/Configuration/metricsFactory`` (by default
/// the process's `MetricsSystem.factory`, which records nothing until the app bootstraps a backend), so emitting is a
/// call on a handler made in advance. The names, labels and units are the DocC article "Metrics" table.
///
/// Every figure is emitted on the client queue (or, for the frames a socket reads, by its reader); a handler must be
/// thread-safe, as swift-metrics requires.
final class ClientMetrics: Sendable {
    /// What ended a call, its `outcome` dimension.
    enum CallOutcome: String, CaseIterable {
        case result, error
        case timedOut = "timed_out"
        case outcomeUnknown = "outcome_unknown"
        case clientClosed = "client_closed"
        case protocolViolation = "protocol_violation"

        /// Whether the server answered (a result or an error): the latencies are the server's.
        var isServerAnswer: Bool { self == .result || self == .error }
    }

    /// Whether anything records the metrics (a backend was bootstrapped or given): without one, the per-frame counts
    /// are not even added up.
    let isRecording: Bool
    let connectionAttempts: Counter
    private let sessions: [ConnectionStatus.SessionStart: Counter]
    let reconnects: Counter
    let heartbeatTimeouts: Counter
    let framesReceived: Counter
    let bytesReceived: Counter
    let framesSent: Counter
    let bytesSent: Counter
    let callsStarted: Counter
    private let callsCompleted: [CallOutcome: Counter]
    let callResultLatency: Timer
    let callUpdatedLatency: Timer
    let subscriptionReadyLatency: Timer
    /// Up and down with this client's subscriptions: clients sharing a series add up (a meter, not a gauge one client
    /// would overwrite).
    let subscriptionsActive: Meter
    let callsPending: Meter
    private let violations: [DDPProtocolViolation.MetricKind: Counter]
    let wireBytesReceived: Counter
    let wireBytesSent: Counter
    let stubDuration: Timer
    let stubReplays: Counter
    /// Calls kept in the offline store (made here or restored), up and down as the store takes and drops them.
    let offlineCalls: Meter
    let writeBehindLag: Timer
    /// The cache's metrics, for the client's ``Database`` (`nil` when nothing records).
    let database: DatabaseMetrics?

    /// The metrics of one client: labelled `client: label` when `label` is set.
    init(factory: any MetricsFactory, label: String?) {
        isRecording = !(factory is NOOPMetricsHandler)
        let base: [(String, String)] = label.map { [("client", $0)] } ?? []
        func counter(_ name: String, _ dimensions: [(String, String)] = []) -> Counter {
            Counter(label: name, dimensions: base + dimensions, factory: factory)
        }
        func timer(_ name: String) -> Timer {
            Timer(label: name, dimensions: base, preferredDisplayUnit: .milliseconds, factory: factory)
        }
        connectionAttempts = counter("meteor_ddp_connection_attempts_total")
        sessions = Dictionary(
            uniqueKeysWithValues: [ConnectionStatus.SessionStart.new, .resumed, .resumeRefused].map {
                ($0, counter("meteor_ddp_sessions_total", [("start", Self.name(of: $0))]))
            })
        reconnects = counter("meteor_ddp_reconnects_total")
        heartbeatTimeouts = counter("meteor_ddp_heartbeat_timeouts_total")
        framesReceived = counter("meteor_ddp_frames_received_total")
        bytesReceived = counter("meteor_ddp_bytes_received_total")
        framesSent = counter("meteor_ddp_frames_sent_total")
        bytesSent = counter("meteor_ddp_bytes_sent_total")
        callsStarted = counter("meteor_ddp_calls_started_total")
        callsCompleted = Dictionary(
            uniqueKeysWithValues: CallOutcome.allCases.map {
                ($0, counter("meteor_ddp_calls_completed_total", [("outcome", $0.rawValue)]))
            })
        callResultLatency = timer("meteor_ddp_call_result_duration")
        callUpdatedLatency = timer("meteor_ddp_call_updated_duration")
        subscriptionReadyLatency = timer("meteor_ddp_subscription_ready_duration")
        subscriptionsActive = Meter(label: "meteor_ddp_subscriptions_active", dimensions: base, factory: factory)
        callsPending = Meter(label: "meteor_ddp_calls_pending", dimensions: base, factory: factory)
        violations = Dictionary(
            uniqueKeysWithValues: DDPProtocolViolation.MetricKind.allCases.map {
                ($0, counter("meteor_ddp_protocol_violations_total", [("kind", $0.rawValue)]))
            })
        wireBytesReceived = counter("meteor_ddp_wire_bytes_received_total")
        wireBytesSent = counter("meteor_ddp_wire_bytes_sent_total")
        stubDuration = timer("meteor_ddp_stub_duration")
        stubReplays = counter("meteor_ddp_stub_replays_total")
        offlineCalls = Meter(label: "meteor_ddp_offline_calls", dimensions: base, factory: factory)
        writeBehindLag = timer("meteor_ddp_write_behind_lag_duration")
        database = isRecording ? DatabaseMetrics(factory: factory, base: base) : nil
    }

    /// A connection reached ``ConnectionStatus/State/connected`` (`afterAnother`: the client had a session before).
    func sessionBegan(_ start: ConnectionStatus.SessionStart, afterAnother: Bool) {
        sessions[start]?.increment()
        if afterAnother { reconnects.increment() }
    }

    static func name(of start: ConnectionStatus.SessionStart) -> String {
        switch start {
        case .new: "new"
        case .resumed: "resumed"
        case .resumeRefused: "resume_refused"
        }
    }

    func callCompleted(_ outcome: CallOutcome) {
        callsCompleted[outcome]?.increment()
    }

    func protocolViolation(_ violation: DDPProtocolViolation) {
        violations[violation.metricKind]?.increment()
    }

    static func outcome(of result: Result<EJSONValue?, any Error>) -> CallOutcome {
        guard case .failure(let error) = result else { return .result }
        guard let methodError = error as? MethodError else { return .error }
        switch methodError.kind {
        case .invocationFailed, .stubFailed: return .error
        case .clientClosed: return .clientClosed
        case .protocolViolation: return .protocolViolation
        case .outcomeUnknown: return .outcomeUnknown
        case .timedOut: return .timedOut
        }
    }

    /// Reports the frames and bytes the reader counted since the last report, and what crossed the wire since.
    func report(_ traffic: ReceivedTraffic, wire: (received: Int, sent: Int)) {
        if wire.received > 0 { wireBytesReceived.increment(by: Int64(wire.received)) }
        if wire.sent > 0 { wireBytesSent.increment(by: Int64(wire.sent)) }
        let frames = traffic.frames.exchange(0, ordering: .relaxed)
        guard frames > 0 else { return }
        framesReceived.increment(by: Int64(frames))
        bytesReceived.increment(by: Int64(traffic.bytes.exchange(0, ordering: .relaxed)))
    }

    /// Nanoseconds on the monotonic clock, for the latencies.
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}

/// The frames and bytes the reader read, added up on its thread (two relaxed atomic adds a frame) and reported by
/// the client queue with the burst that handles them.
final class ReceivedTraffic: Sendable {
    let frames = ManagedAtomic<Int>(0)
    let bytes = ManagedAtomic<Int>(0)

    func frameRead(bytes count: Int) {
        frames.wrappingIncrement(ordering: .relaxed)
        bytes.wrappingIncrement(by: count, ordering: .relaxed)
    }
}

/// What the latencies and gauges need between two events, kept on the client queue.
struct MetricTimings {
    /// When each call in flight was made (its `call`), by id.
    var callsStartedAt: [String: UInt64] = [:]
    /// When each subscription not yet ready was made, by its shared state.
    var subscriptionsStartedAt: [ObjectIdentifier: UInt64] = [:]
    /// The subscriptions the client holds (made, not stopped or ended).
    var activeSubscriptions: Set<ObjectIdentifier> = []
    /// Whether the client was connected before (a new connection is a reconnect).
    var hadSession = false
    /// From `subscribe` to `ready`, in milliseconds, of the subscriptions held that became ready.
    var subscriptionReadyMilliseconds: [ObjectIdentifier: Double] = [:]
    /// The last call → `updated` latencies, in milliseconds (at most ``ClientDiagnostics/latencyWindow``).
    var optimisticLatencies = Deque<Double>()
    /// When the client was made: the age of a call restored from the offline store counts from it.
    var createdAt = ClientMetrics.now()
    /// The connection whose wire bytes were last reported, and its counts then.
    var wireReported: (connection: ObjectIdentifier?, received: Int, sent: Int) = (nil, 0, 0)
}

extension DDPClient {
    /// Runs `emit` (a metrics backend's handlers: the app's code) on this thread, or on the client queue when this
    /// thread is an event loop's (the client queue's work runs on the caller's thread inside `queue.sync`). Nothing at
    /// all without a backend.
    func emitMetrics(_ emit: @escaping @Sendable (ClientMetrics) -> Void) {
        guard metrics.isRecording else { return }
        guard MultiThreadedEventLoopGroup.currentEventLoop == nil else {
            let metrics = metrics
            return queue.async { emit(metrics) }
        }
        emit(metrics)
    }

    /// The bytes the current connection carried on the wire since the last report (a new connection counts from 0).
    func wireBytesSinceLastReport() -> (received: Int, sent: Int) {
        guard let connection, let statistics = connection.wireStatistics else { return (0, 0) }
        let id = ObjectIdentifier(connection)
        if metricTimings.wireReported.connection != id { metricTimings.wireReported = (id, 0, 0) }
        let last = metricTimings.wireReported
        metricTimings.wireReported = (id, statistics.bytesReceived, statistics.bytesSent)
        return (statistics.bytesReceived - last.received, statistics.bytesSent - last.sent)
    }

    /// A call was made: its latencies start.
    func callStarted(_ id: String) {
        metricTimings.callsStartedAt[id] = ClientMetrics.now()
        emitMetrics {
            $0.callsStarted.increment()
            $0.callsPending.increment()
        }
    }

    /// Its `result` came (or a deadline made one up, which no latency counts).
    func callResultArrived(_ invocation: MethodCoordinator.Invocation) {
        guard let started = metricTimings.callsStartedAt[invocation.id], let result = invocation.result,
            ClientMetrics.outcome(of: result).isServerAnswer
        else { return }
        let nanoseconds = Int64(ClientMetrics.now() - started)
        emitMetrics { $0.callResultLatency.recordNanoseconds(nanoseconds) }
    }

    /// A call completed (with its `result` and its `updated`, its data visible, or failed). A call this client did not
    /// make (restored from the offline store) counts in no metric.
    func callEnded(_ invocation: MethodCoordinator.Invocation) {
        guard let started = metricTimings.callsStartedAt.removeValue(forKey: invocation.id) else { return }
        let outcome = invocation.result.map(ClientMetrics.outcome(of:))
        let nanoseconds = ClientMetrics.now() - started
        // The optimistic update confirmed: the server's `updated` and its answer, not a deadline's made-up ones.
        let confirmed = invocation.updatedReceived && outcome?.isServerAnswer == true
        if confirmed {
            if metricTimings.optimisticLatencies.count == ClientDiagnostics.latencyWindow {
                metricTimings.optimisticLatencies.removeFirst()
            }
            metricTimings.optimisticLatencies.append(Double(nanoseconds) / 1e6)
        }
        emitMetrics {
            if let outcome { $0.callCompleted(outcome) }
            if confirmed { $0.callUpdatedLatency.recordNanoseconds(Int64(nanoseconds)) }
            $0.callsPending.decrement()
        }
    }

    func subscriptionStarted(_ state: SubscriptionState) {
        metricTimings.subscriptionsStartedAt[ObjectIdentifier(state)] = ClientMetrics.now()
        guard metricTimings.activeSubscriptions.insert(ObjectIdentifier(state)).inserted else { return }
        emitMetrics { $0.subscriptionsActive.increment() }
    }

    /// A subscription became ready for its handles (its data in the cache).
    func subscriptionBecameReady(_ state: SubscriptionState) {
        guard let started = metricTimings.subscriptionsStartedAt.removeValue(forKey: ObjectIdentifier(state)) else {
            return
        }
        let nanoseconds = ClientMetrics.now() - started
        metricTimings.subscriptionReadyMilliseconds[ObjectIdentifier(state)] = Double(nanoseconds) / 1e6
        emitMetrics { $0.subscriptionReadyLatency.recordNanoseconds(Int64(nanoseconds)) }
    }

    /// A subscription failed or stopped.
    func subscriptionEnded(_ state: SubscriptionState) {
        metricTimings.subscriptionsStartedAt.removeValue(forKey: ObjectIdentifier(state))
        metricTimings.subscriptionReadyMilliseconds.removeValue(forKey: ObjectIdentifier(state))
        guard metricTimings.activeSubscriptions.remove(ObjectIdentifier(state)) != nil else { return }
        emitMetrics { $0.subscriptionsActive.decrement() }
    }

    /// The client closed: what it held leaves the meters, and the timings start over.
    func metricsClosed() {
        let (calls, subscriptions) = (metricTimings.callsStartedAt.count, metricTimings.activeSubscriptions.count)
        metricTimings = MetricTimings(
            hadSession: metricTimings.hadSession, optimisticLatencies: metricTimings.optimisticLatencies,
            createdAt: metricTimings.createdAt)
        emitMetrics {
            $0.callsPending.decrement(by: Double(calls))
            $0.subscriptionsActive.decrement(by: Double(subscriptions))
        }
    }
}

extension DDPProtocolViolation {
    /// The `kind` dimension of a violation: its ``Kind`` case, without the details.
    enum MetricKind: String, CaseIterable {
        case malformedJSON = "malformed_json"
        case binaryFrame = "binary_frame"
        case notAnObject = "not_an_object"
        case missingMsg = "missing_msg"
        case unknownMessage = "unknown_message"
        case missingField = "missing_field"
        case wrongFieldType = "wrong_field_type"
        case unexpected
    }

    var metricKind: MetricKind {
        switch kind {
        case .malformedJSON: .malformedJSON
        case .binaryFrame: .binaryFrame
        case .notAnObject: .notAnObject
        case .missingMsg: .missingMsg
        case .unknownMessage: .unknownMessage
        case .missingField: .missingField
        case .wrongFieldType: .wrongFieldType
        case .unexpected: .unexpected
        }
    }
}

extension Meter {
    /// Moves the meter by `delta`, up or down (a meter's handler takes only positive amounts).
    func move(by delta: Int) {
        if delta > 0 { increment(by: Double(delta)) } else if delta < 0 { decrement(by: Double(-delta)) }
    }
}
