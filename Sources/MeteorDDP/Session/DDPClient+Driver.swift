import Dispatch
import EJSON
import NIOPosix

// The client's driver for what the server sends: every input from the transport (a batch of frames and transport
// events from the inbox, a session message, data, a method's result and `updated`, `ready`, `nosub`) goes to the core
// through its funnel (`ClientCore.handle(_:)`, via `decide(_:)`), and what comes back is performed by `run(_:)`
// (DDPClient+Actions.swift) after the core's mutation has completed. The app's requests hand the core their inputs
// from their own files the same way (a call and its stub in Methods/DDPClient+Methods.swift, a subscription in
// Subscriptions/DDPClient+Subscriptions.swift, the connection in Connection/DDPClient+Connecting.swift, which keeps the
// transport's and the timers' glue); the offline store's from Persistence/DDPClient+Persistence.swift.

extension DDPClient {
    // MARK: - Inputs

    /// Handles what the inbox holds, in order, until a new socket's reconnect hooks start (the rest then waits for
    /// them).
    func drainInbox() {
        dispatchPrecondition(condition: .onQueue(queue))
        // The outermost drain publishes what it and any drain inside it reported.
        let outermost = reportsOfThisDrain == nil
        if outermost { reportsOfThisDrain = [] }
        defer { if outermost { publishReportsOfThisDrain() } }
        var items = inbox.takeAll()
        if !items.isEmpty { lastFramesHandledAt = scheduler.now }
        var index = items.startIndex
        while index < items.endIndex {
            // Moved out (a trivial item left in its place) and consumed down the path: the message's strings and
            // fields are never copied (retained and released) on the way to the cache.
            let item = items.withUnsafeMutableBufferPointer { buffer in
                let slot = buffer.baseAddress! + index
                defer { slot.initialize(to: .transport(.opened, generation: -1)) }
                return slot.move()
            }
            switch consume item {
            case .message(let parsed, let generation): handleIncoming(parsed, generation: generation)
            case .transport(let event, let generation): handleTransportEvent(event, generation: generation)
            }
            index += 1
            if core.reconnectHooksAreRunning {
                if inbox.putBack(items[index...]) { queue.async { self.handle(.reconnectHooksHoldLimitReached) } }
                break
            }
        }
        inbox.recycle(consume items)
        if metrics.isRecording {
            let (traffic, wire) = (receivedTraffic, wireBytesSinceLastReport())
            emitMetrics { $0.report(traffic, wire: wire) }
        }
        run(decide(.burstHandled))
    }

    /// Publishes the errors the drain reported so far, in order; `continuing`: the drain goes on collecting (a batch is
    /// published whenever it holds as many as a consumer's buffer keeps, so it stays bounded).
    func publishReportsOfThisDrain(continuing: Bool = false) {
        guard let reports = reportsOfThisDrain.take() else { return }
        if continuing { reportsOfThisDrain = [] }
        errorBroadcaster.yield(contentsOf: reports)
    }

    private func handleTransportEvent(_ event: TransportEvent, generation: Int) {
        switch event {
        case .opened:
            if generation == core.connectionGeneration { logger.debug("socket open") }
            handle(.transportOpened(generation: generation))
        case .binary(let byteCount): handle(.binaryFrameReceived(byteCount: byteCount, generation: generation))
        case .closed(let error): handle(.transportClosed(error, generation: generation))
        case .text:
            preconditionFailure("Internal inconsistency: text frames are handled by handleIncoming")
        }
    }

    /// Handles one parsed frame from the current connection, on the client queue (``drainInbox()`` checks it once per
    /// batch).
    func handleIncoming(_ parsed: consuming Result<IncomingMessage, DDPProtocolViolation>, generation: Int) {
        guard generation == core.connectionGeneration else { return }
        // Any frame proves the connection is alive (heartbeat.js `messageReceived`). (Not `handle(_:)`: its queue
        // check, once per frame, is ``drainInbox()``'s once per batch.)
        run(decide(.frameReceived(counted: Self.isCounted(parsed))))
        // Consumed: each message moves on down the path, its strings and fields never copied (retained) on the way.
        switch consume parsed {
        case .failure(let violation) where violation.isGreeting:
            logger.trace("ignored a greeting", metadata: ["frame": "\(violation.excerpt)"])
        case .failure(let violation):
            report(.protocolViolation(violation))
            if let unreadable = violation.unreadable, core.sessionVersion != nil {
                handleUnreadable(unreadable, violation)
            }
        case .success(.message(let message)):
            if logger.logLevel <= .trace, logThrottle.admitFrame("received", message.name) {
                logger.trace("received", metadata: ["frame": "\(loggable(message))"])
            }
            handle(message)
        case .success(let document):
            if logger.logLevel <= .trace, logThrottle.admitFrame("received", document.name) {
                logger.trace("received", metadata: ["msg": "\(document.name)"])
            }
            handleSessionData(document)
        }
    }

    /// Whether a frame counts towards the session's received messages as the server counts what it sends: every
    /// message but `ping` and `pong`; a frame with no readable `msg` is no message.
    @inline(__always)
    private static func isCounted(_ parsed: borrowing Result<IncomingMessage, DDPProtocolViolation>) -> Bool {
        switch parsed {
        case .success(.message(.ping)), .success(.message(.pong)): false
        case .success: true
        case .failure(let violation): violation.hasMessageType
        }
    }

    /// Data and method messages: for the established session only. Inlined, as the two steps after it: a message
    /// passed down by value is copied from frame to frame (~100 bytes, several `memcpy`s per frame on a flood).
    @inline(__always)
    private func handleSessionData(_ message: consuming IncomingMessage) {
        guard core.sessionVersion != nil else {
            report(ClientCore.unexpected(message.serverMessage, "data before the session was established"))
            return
        }
        handleSessionMessage(message)
    }

    private func handle(_ message: ServerMessage) {
        switch message {
        case .connected(let session): handle(.connectedReceived(session: session))
        case .failed(let version): handle(.failedReceived(version: version))
        case .ping(let id): handle(.pingReceived(id: id))
        case .pong:
            break
        case .error(let reason, let offending):
            report(.serverError(reason: reason, offendingMessage: offending.map { EJSON.stringify($0) }))
        case .added, .changed, .removed, .ready, .nosub, .updated, .result:
            handleSessionData(.message(message))
        }
    }

    // MARK: - Data and method messages of the established session

    /// A data or method message of the established session (LC `_livedata_data`, `_livedata_result`): a result goes
    /// to its call; data is held while the session waits for quiescence (the core decides), else routed (LC
    /// `_processOneDataMessage`). `held`: quiescence released it.
    @inline(__always)
    func handleSessionMessage(_ message: consuming IncomingMessage, held: Bool = false) {
        // Two levels: a nested pattern over the consumed message would copy it (retaining its fields) per frame.
        switch consume message {
        case .document(let document): run(decide(.documentReceived(document, held: held)))
        case .message(let message): handleSessionMessage(message, held: held)
        }
    }

    private func handleSessionMessage(_ message: ServerMessage, held: Bool) {
        switch message {
        case .result(let id, let result, let error):
            methodResultReceived(id, outcome: error.map { .failure($0) } ?? .success(result))
        case .removed(let collection, let id):
            run(decide(.removedReceived(collection: collection, id: id, held: held)))
        case .ready(let ids): run(decide(.readyReceived(ids: ids, storeIsIdle: store.isIdle, held: held)))
        case .nosub(let id, let error):
            run(decide(.nosubReceived(id: id, error: error, storeIsIdle: store.isIdle, held: held)))
        case .updated(let ids): run(decide(.updatedReceived(ids: ids, storeIsIdle: store.isIdle, held: held)))
        default:
            // `added` or `changed` the packed decoder declined: the same message once its fields are packed.
            guard let document = DocumentMessage(message) else {
                preconditionFailure("Internal inconsistency: \(message.name) is not a data message")
            }
            run(decide(.documentReceived(document, held: held)))
        }
    }

    /// A document message that did not go to the cache: logged, or the undeclared collections' limit reported.
    func perform(_ routing: ClientCore.DataRouting, key: DocumentKey) {
        switch routing {
        case .toCache: preconditionFailure("Internal inconsistency: the cache's updates come as applyToCache")
        case .keptAside(let anomaly): logKeptAside(anomaly, key: key)
        case .dropped(report: false): break
        case .dropped(report: true):
            report(
                .limitReached(
                    "\(configuration.maxDocumentsInUndeclaredCollections) documents cached for collections "
                        + "the app never declared; new documents of \"\(key.collectionName)\" are dropped "
                        + "(declare it with DDPClient.collection(_:))"
                ))
        }
    }

    /// Logs a data message that the kept-aside copy of a stub-written document took instead of the cache.
    private func logKeptAside(_ anomaly: ServerDocumentBuffer.Anomaly?, key: DocumentKey) {
        if let anomaly {
            guard admitsDebugLine(.keptAsideAnomaly) else { return }
            logger.debug(
                "server data anomaly for a stub-written document",
                metadata: ["anomaly": "\(anomaly)", "id": "\(key.documentID)"])
        } else if logger.logLevel <= .trace, logThrottle.admitFrame("kept aside", "") {
            logger.trace(
                "kept aside for a pending stub",
                metadata: ["collection": "\(key.collectionName)", "id": "\(key.documentID)"])
        }
    }

    /// Does `work` on the client queue once the cache has applied everything queued before it, after all work queued
    /// before it (LC `_afterUpdateCallbacks`): at once when nothing is pending or queued.
    func runAfterUpdate(_ work: AfterUpdateWork) {
        handle(.afterUpdateRequested(work, afterServerDocuments: false, storeIsIdle: store.isIdle))
    }

    /// Asks the cache for a flush; once done, the work waiting for `ticket` is due.
    func requestFlush(_ ticket: Int) {
        store.performAfterFlush { [weak self] in
            guard let self else { return }
            self.queue.async { self.flushCompleted(ticket) }
        }
    }

    /// The cache's flush of `ticket` completed: the work it released is done one item at a time, in a loop (doing one
    /// may queue more, behind the rest; a loop keeps the stack flat however many are due).
    private func flushCompleted(_ ticket: Int) {
        var actions = decide(.flushCompleted(ticket: ticket))
        while !actions.isEmpty {
            run(actions)
            actions = decide(.afterUpdatePerformed)
        }
    }

    /// Work that waited for the cache, now due.
    func perform(_ work: AfterUpdateWork) {
        switch work {
        case .methodDataVisible(let id): methodDataBecameVisible(id)
        case .subscriptionReady(let state):
            subscriptionBecameReady(state)
            state.update(.ready)
        case .judgeRestoredCalls: run(decide(.restoredCallsJudgementDue(force: false)))
        }
    }

    // MARK: - Methods

    /// A call's `updated` released the documents only its stub held: with persistence on, the server versions noted
    /// so far are handed over first, and the disk keeps the released documents as they were until the call leaves
    /// the store (``WriteBehind/hold(_:)``: a restart must find a stored call's effect); the cache takes the server's
    /// versions, in the same transaction as the documents' pending writes are settled.
    func apply(_ released: ClientCore.ReleasedDocuments) {
        if let persistence {
            persistence.writer.serverDocumentsChanged(released.serverChanges)
            if !released.replacements.isEmpty { persistence.writer.hold(released.replacements.map(\.key)) }
        }
        for replacement in released.replacements {
            store.enqueue(
                .replaced(
                    replacement.key, replacement.fields.map { Document(id: replacement.key.documentID, fields: $0) }))
        }
        store.settle(released.replacements.map(\.key))
    }

    func methodDataBecameVisible(_ id: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        run(decide(.methodDataVisible(id: id)))
    }

    /// A `result`, `updated`, `ready` or `nosub` that did not parse but names its ids (reported already): a call's
    /// result fails it with ``MethodError/Kind/protocolViolation``; an `updated` counts for the ids it names (held
    /// while the session waits for quiescence, as any `updated`); a subscription waiting for `ready` or ended by the
    /// `nosub` fails with the violation. Ids nothing waits on are ignored (the violation was reported).
    func handleUnreadable(_ unreadable: UnreadableFrame, _ violation: DDPProtocolViolation) {
        switch unreadable {
        case .result(let id):
            guard let name = core.session.methods.name(of: id) else { return }
            methodResultReceived(
                id, outcome: .failure(MethodError(methodName: name, kind: .protocolViolation, violation: violation)))
        case .updated(let ids):
            handleSessionMessage(.message(.updated(methodIDs: ids)))
        case .ready(let ids):
            for id in ids { handle(.subscriptionFrameUnreadable(id: id, violation)) }
        case .nosub(let id):
            handle(.subscriptionFrameUnreadable(id: id, violation))
        }
    }

    private func methodResultReceived(_ id: String, outcome: Result<EJSONValue?, any Error>) {
        run(decide(.resultReceived(id: id, outcome)))
    }

    func notifyResultReceived(_ invocation: MethodCoordinator.Invocation) {
        guard let result = invocation.result else { return }
        invocation.options.onResultReceivedOnClientQueue?(result)
        guard let callback = invocation.options.onResultReceived else { return }
        userCode.run { callback(result) }
    }

    /// Runs a completed call's completion: an awaiting task's resumes here (no user code runs; while a task drains the
    /// inbox, once it has left the client queue), a handler on the callback queue.
    func complete(_ invocation: MethodCoordinator.Invocation) {
        _ = awaitedCalls.withLockedValue { $0.removeValue(forKey: invocation.id) }
        guard let result = invocation.result else { return }
        let completion = invocation.completion
        guard invocation.completesInline else { return userCode.run { completion(result) } }
        if deferredCompletions != nil {
            deferredCompletions!.append { completion(result) }
        } else {
            completion(result)
        }
    }

    /// Drains the inbox on the client queue from the calling task's thread: a ``CallWaiter`` was asked to. Not on an
    /// event loop (a task with an event loop as its executor): the client queue's own thread drains then.
    func drainHandedOver() {
        guard MultiThreadedEventLoopGroup.currentEventLoop == nil else { return queue.async { self.drainInbox() } }
        // `sync` returning nothing: the overlay's generic, throwing form costs ~1,000 instructions a frame more.
        var completions: [@Sendable () -> Void] = []
        queue.sync {
            self.deferredCompletions = []
            self.drainInbox()
            completions = self.deferredCompletions ?? []
            self.deferredCompletions = nil
        }
        for completion in completions { completion() }
    }

    /// Puts calls the core released on the wire, in order.
    func send(calls invocations: [MethodCoordinator.Invocation]) {
        guard !invocations.isEmpty else { return }
        awaitedCalls.withLockedValue { awaited in
            for invocation in invocations { awaited[invocation.id] = .some(invocation.waiter) }
        }
        for invocation in invocations { send(invocation.message) }
    }
}
