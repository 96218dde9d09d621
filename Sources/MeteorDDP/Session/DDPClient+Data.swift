import Dispatch
import EJSON

// MARK: - Data and method messages of the established session

extension DDPClient {
    /// A data or method message of the established session (LC `_livedata_data`, `_livedata_result`).
    func handleSessionMessage(_ message: ServerMessage) {
        dispatchPrecondition(condition: .onQueue(queue))
        switch message {
        case .added(let collection, let id, let fields):
            let key = DocumentKey(collectionName: collection, documentID: Self.documentID(fromWire: id))
            route(session.serverDocuments.serverAdded(key, fields: fields), key: key, message: message) {
                .added(key, fields)
            }
        case .changed(let collection, let id, let fields, let cleared):
            let key = DocumentKey(collectionName: collection, documentID: Self.documentID(fromWire: id))
            route(session.serverDocuments.serverChanged(key, fields: fields, cleared: cleared), key: key, message: message) {
                .changed(key, fields, cleared: cleared)
            }
        case .removed(let collection, let id):
            let key = DocumentKey(collectionName: collection, documentID: Self.documentID(fromWire: id))
            route(session.serverDocuments.serverRemoved(key), key: key, message: message) { .removed(key) }
        case .ready(let ids):
            subscriptionsBecameReady(ids)
        case .nosub(let id, let error):
            subscriptionEnded(id, error: error)
        case .updated(let ids):
            for id in ids { methodUpdated(id) }
            endQuiescenceIfPossible()
        case .result(let id, let result, let error):
            methodResultReceived(id, result: result, error: error)
        case .connected, .failed, .ping, .pong, .error:
            preconditionFailure("Internal inconsistency: \(message.name) is not a session message")
        }
    }

    /// The document id a wire id stands for (Meteor's `MongoID.idParse`): string ids that were escaped with `-` lose
    /// it; other forms (`~` + EJSON for non-string ids, ObjectID hex) are kept as they travel.
    static func documentID(fromWire id: String) -> String {
        if case .string(let parsed)? = MongoID.parse(id), id.hasPrefix("-") { return parsed }
        return id
    }

    private func route(_ routing: ServerDocumentBuffer.Routing, key: DocumentKey, message: ServerMessage, update: () -> DataUpdate) {
        switch routing {
        case .toCache:
            store.enqueue(update())
        case .keptAside(nil):
            logger.trace("kept aside for a pending stub", metadata: ["collection": "\(key.collectionName)", "id": "\(key.documentID)"])
        case .keptAside(let anomaly?):
            logger.debug("server data anomaly for a stub-written document", metadata: ["anomaly": "\(anomaly)", "id": "\(key.documentID)"])
        }
    }

    /// Runs `block` on the client queue once every document tracked for pending stubs now has been flushed and the
    /// store has applied everything queued before (LC `_runWhenAllServerDocsAreFlushed`).
    func runWhenAllServerDocumentsAreFlushed(_ block: @escaping @Sendable () -> Void) {
        dispatchPrecondition(condition: .onQueue(queue))
        // Nothing kept aside and nothing on its way into the cache: it is all visible already.
        // (Only the client queue enqueues, and we are on it, so nothing can arrive in between.)
        if session.serverDocuments.isEmpty, store.isIdle {
            block()
            return
        }
        let afterFlush: @Sendable () -> Void = { [weak self] in
            guard let self else { return }
            self.store.performAfterFlush { self.queue.async(execute: block) }
        }
        if !session.serverDocuments.runWhenAllFlushed(afterFlush) {
            afterFlush()
        }
    }

    // MARK: - Methods

    private func methodUpdated(_ id: String) {
        let (replacements, callbacks) = session.serverDocuments.methodUpdated(id)
        for replacement in replacements {
            store.enqueue(.replaced(replacement.key, replacement.fields))
        }
        if !callbacks.isEmpty {
            store.performAfterFlush { [weak self] in
                self?.queue.async { for callback in callbacks { callback() } }
            }
        }
        session.methodsBlockingQuiescence.remove(id)
        runWhenAllServerDocumentsAreFlushed { [weak self] in self?.methodDataBecameVisible(id) }
    }

    func methodDataBecameVisible(_ id: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        handle(session.methods.dataBecameVisible(id: id), id: id)
    }

    private func methodResultReceived(_ id: String, result: EJSONValue?, error: MeteorError?) {
        let name = session.methods.invocations[id]?.name ?? "?"
        let outcome: Result<EJSONValue?, MethodError> = error.map { .failure(.server(name, $0)) } ?? .success(result)
        let handled = session.methods.receivedResult(id: id, outcome)
        if case .recorded(let invocation) = handled {
            notifyResultReceived(invocation)
        } else if case .completed(let invocation, _) = handled {
            notifyResultReceived(invocation)
        }
        handle(handled, id: id)
    }

    private func notifyResultReceived(_ invocation: MethodCoordinator.Invocation) {
        guard let result = invocation.result else { return }
        invocation.options.onResultReceivedOnClientQueue?(result)
        guard let callback = invocation.options.onResultReceived else { return }
        callbackQueue.async { callback(result) }
    }

    private func handle(_ outcome: MethodCoordinator.ResultOutcome, id: String) {
        switch outcome {
        case .unknown:
            report(.protocolViolation(DDPProtocolViolation(.unexpected(message: "result", reason: "no outstanding method has id \(id)"), frame: id)))
        case .recorded:
            break
        case .completed(let invocation, let next):
            if let result = invocation.result {
                let completion = invocation.completion
                if invocation.completesInline {
                    // Resumes an awaiting task: no user code runs here.
                    if deferredCompletions != nil {
                        deferredCompletions!.append { completion(result) }
                    } else {
                        completion(result)
                    }
                } else {
                    callbackQueue.async { completion(result) }
                }
            }
            sendInvocations(next)
        }
    }

    /// Puts calls on the wire; a wait call also holds incoming data until its `updated`.
    func sendInvocations(_ invocations: [MethodCoordinator.Invocation]) {
        for invocation in invocations {
            send(invocation.message)
            if invocation.options.wait {
                session.methodsBlockingQuiescence.insert(invocation.id)
                beginQuiescence(resetting: false)
            }
        }
    }

    // MARK: - Subscriptions

    private func subscriptionsBecameReady(_ ids: [String]) {
        let (known, unknown) = session.subscriptions.ready(ids)
        for id in unknown {
            logger.debug("ready for an unknown subscription ignored", metadata: ["id": "\(id)"])
        }
        for record in known where record.shared.status != .ready {
            let shared = record.shared
            runWhenAllServerDocumentsAreFlushed { shared.update(.ready) }
        }
        endQuiescenceIfPossible()
    }

    private func subscriptionEnded(_ id: String, error: MeteorError?) {
        guard let record = session.subscriptions.nosub(id) else {
            logger.debug("nosub for an unknown subscription ignored", metadata: ["id": "\(id)"])
            endQuiescenceIfPossible()
            return
        }
        if let error {
            logger.debug("subscription failed", metadata: ["name": "\(record.name)", "error": "\(error)"])
            record.shared.update(.failed(SubscriptionError(name: record.name, meteorError: error)))
        } else {
            record.shared.update(.stopped)
        }
        endQuiescenceIfPossible()
    }
}
