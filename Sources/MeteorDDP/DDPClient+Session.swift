import Dispatch
import EJSON

// MARK: - Session hooks for subscriptions, methods and data

extension DDPClient {
    /// A fresh socket is open and `connect` was just sent (LC `onReset`): unanswered methods go out again (after what
    /// the reconnect hooks call), then every subscription in use.
    func sessionDidReset() {
        dispatchPrecondition(condition: .onQueue(queue))
        let (failed, saved) = session.methods.socketReset()
        for invocation in failed {
            logger.debug("method failed by the reconnect (noRetry)", metadata: ["method": "\(invocation.name)", "id": "\(invocation.id)"])
        }
        for (_, hook) in session.reconnectHooks.sorted(by: { $0.key < $1.key }) { hook() }
        sendInvocations(session.methods.requeue(saved))
        for record in session.subscriptions.recordsToResend() {
            send(.sub(id: record.id, name: record.name, params: record.params))
            session.subscriptions.markSent(record.id)
        }
    }

    /// The server sent `connected` (LC `_livedata_connected`). After a reconnect the stores are reset at quiescence:
    /// nothing reaches the cache until every previously ready subscription is ready again and every method sent on
    /// this socket has its `updated`; then the cache becomes what the server sent, as one diff.
    func sessionDidConnect(isReconnect: Bool) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard isReconnect else { return }
        session.serverDocuments.reset()
        _ = session.subscriptions.startRevival()
        let (completeAtQuiescence, blocking) = session.methods.reconnectQuiescence()
        session.methodsBlockingQuiescence = Set(blocking)
        for id in completeAtQuiescence {
            session.afterQuiescence.append { [weak self] in
                guard let self else { return }
                self.queue.async { self.methodDataBecameVisible(id) }
            }
        }
        if session.holding != nil {
            store.release()
            session.holding = nil
        }
        beginQuiescence(resetting: true)
        endQuiescenceIfPossible()
    }

    /// Runs `hook` on every new socket, right after `connect` and before unanswered methods are re-sent (Meteor's
    /// `DDP.onReconnect`): methods it calls go out first. A hook with the same name replaces the previous one.
    /// The hook runs on the client queue; it may call methods.
    public func onReconnect(_ name: String, _ hook: @escaping @Sendable () -> Void) {
        queue.async { self.session.reconnectHooks["user." + name] = hook }
    }

    /// The session ended (connection lost or disconnected). Everything is kept for the next connection.
    func sessionDidDisconnect() {
        dispatchPrecondition(condition: .onQueue(queue))
    }

    // MARK: - Quiescence

    func beginQuiescence(resetting: Bool) {
        guard session.holding == nil else { return }
        session.holding = (resetting, 0)
        store.hold(resetting: resetting)
    }

    func endQuiescenceIfPossible() {
        guard session.holding != nil, !session.isWaitingForQuiescence else { return }
        session.holding = nil
        store.release()
        let callbacks = session.afterQuiescence
        session.afterQuiescence = []
        if !callbacks.isEmpty {
            store.performAfterFlush { for callback in callbacks { callback() } }
        }
    }
}
