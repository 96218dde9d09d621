import DequeModule
import Foundation

extension DDPClient {
    /// One consistent snapshot of the client (``ClientDiagnostics``): the connection and its session, the last
    /// errors, each subscription, each pending call, the collections, what waits, and the optimistic-update latency.
    /// Taken on the client queue in one go: the session's parts describe one moment, the collection counts the cache's
    /// latest committed transaction. Cheap enough to poll once a second from a debug screen (`meteor-ddp-benchmarks
    /// metrics`: 0.3 ms with 100k documents and 1,000 pending calls).
    ///
    /// May be called from anywhere, inside `database.performUpdates` and from a stub included: it waits for the
    /// client queue without holding anything.
    public func diagnostics() async -> ClientDiagnostics {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: self.takeDiagnostics()) }
        }
    }

    /// The snapshot, on the client queue.
    func takeDiagnostics() -> ClientDiagnostics {
        dispatchPrecondition(condition: .onQueue(queue))
        let status = self.status
        let now = ClientMetrics.now()
        func milliseconds(since start: UInt64) -> Double { Double(now &- start) / 1e6 }
        var connection = ClientDiagnostics.Connection(
            state: status.state.rawValue, sessionID: core.machine.lastSession,
            sessionStart: status.sessionStart?.rawValue,
            version: status.isConnected ? core.sessionVersion?.rawValue : nil,
            retryCount: status.retryCount)
        if status.isConnected, let wire = self.connection?.wireStatistics {
            (connection.compression, connection.wireBytesReceived, connection.wireBytesSent) = (
                wire.compression, wire.bytesReceived, wire.bytesSent
            )
        }
        let subscriptions = core.session.subscriptions.order.compactMap { id -> ClientDiagnostics.SubscriptionInfo? in
            guard let record = core.session.subscriptions.records[id] else { return nil }
            return ClientDiagnostics.SubscriptionInfo(
                id: id, name: record.name, parameterCount: record.params.count,
                status: Self.name(of: record.shared.status), handles: record.useCount,
                millisecondsToReady: metricTimings.subscriptionReadyMilliseconds[ObjectIdentifier(record.shared)])
        }
        let methods = core.session.methods
        let startedAt = metricTimings.callsStartedAt
        let calls = methods.invocations.values.map { invocation -> (UInt64, ClientDiagnostics.PendingCall) in
            let started = startedAt[invocation.id] ?? metricTimings.createdAt
            let phase: String
            switch (invocation.result != nil, invocation.updatedReceived) {
            // Sent: on a socket of the session it belongs to (Meteor's "sent" also counts calls waiting for one).
            case (false, false): phase = status.isConnected && methods.isSent(invocation.id) ? "sent" : "queued"
            case (true, false): phase = "result"
            case (false, true): phase = "updated"
            case (true, true): phase = "completing"
            }
            return (
                started,
                ClientDiagnostics.PendingCall(
                    id: invocation.id, name: invocation.name, ageMilliseconds: milliseconds(since: started),
                    phase: phase, storedOffline: core.durability.kept.contains(invocation.id))
            )
        }
        let snapshot = database.snapshot
        let collections = snapshot.collections.keys.sorted().map {
            ClientDiagnostics.CollectionInfo(name: $0, documents: snapshot.documentCount(in: $0))
        }
        return ClientDiagnostics(
            takenAt: Date(), connection: connection, recentErrors: Array(recentErrors.withLockedValue { $0 }),
            subscriptions: subscriptions,
            pendingCalls: calls.sorted { ($0.0, Int($0.1.id) ?? 0, $0.1.id) < ($1.0, Int($1.1.id) ?? 0, $1.1.id) }
                .map(\.1),
            collections: collections,
            queues: ClientDiagnostics.Queues(
                heldForQuiescence: core.session.quiescence?.messages.count ?? 0, pendingCalls: calls.count,
                storedOffline: persistence?.writer.storedCallCount ?? 0,
                changesWaitingForDisk: persistence?.writer.pendingChangeCount ?? 0),
            optimisticUpdateLatency: Self.latency(of: metricTimings.optimisticLatencies))
    }

    /// Keeps `error` among the last ones ``diagnostics()`` shows.
    func recordForDiagnostics(_ error: DDPError) {
        // A server's text (an `error` frame's reason) can be long: the snapshot keeps its start.
        let message = error.message.count > 300 ? String(error.message.prefix(300)) + "…" : error.message
        let recorded = ClientDiagnostics.RecordedError(at: Date(), code: error.code.rawValue, message: message)
        recentErrors.withLockedValue { errors in
            if errors.count == ClientDiagnostics.recentErrorLimit { errors.removeFirst() }
            errors.append(recorded)
        }
    }

    private static func name(of status: SubscriptionStatus) -> String {
        switch status {
        case .pending: "pending"
        case .ready: "ready"
        case .failed: "failed"
        case .stopped: "stopped"
        }
    }

    static func latency(of samples: some Collection<Double>) -> ClientDiagnostics.Latency? {
        guard !samples.isEmpty else { return nil }
        let sorted = samples.sorted()
        // The nearest rank: the smallest sample with at least p of them at or below it.
        func percentile(_ p: Double) -> Double { sorted[max(0, Int((Double(sorted.count) * p).rounded(.up)) - 1)] }
        return ClientDiagnostics.Latency(
            p50Milliseconds: percentile(0.5), p95Milliseconds: percentile(0.95), samples: sorted.count)
    }
}
