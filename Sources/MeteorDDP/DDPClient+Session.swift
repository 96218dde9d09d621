import Dispatch
import EJSON

// MARK: - Session hooks for subscriptions, methods and data

extension DDPClient {
    /// A fresh socket is open and `connect` was just sent (LC `onReset`): the library's hooks run (the resume login),
    /// then the app's hooks on the callback queue, then unanswered methods go out again behind what the hooks
    /// called, then every subscription not yet sent. Incoming messages are held while the app's hooks run, so the new
    /// session is handled in Meteor's order; the socket's thread never waits for them.
    func sessionDidReset() {
        dispatchPrecondition(condition: .onQueue(queue))
        persistenceSocketReset()
        for invocation in session.methods.socketReset() {
            logger.debug("method failed by the reconnect (noRetry)", metadata: ["method": "\(invocation.name)", "id": "\(invocation.id)"])
        }
        session.subscriptions.socketReset()
        for (_, hook) in session.reconnectHooks.sorted(by: { $0.key < $1.key }) { hook() }
        let hooks = session.userReconnectHooks.sorted(by: { $0.key < $1.key }).map(\.value)
        guard !hooks.isEmpty else { return reconnectHooksRan() }
        session.reconnectHooksRuns += 1
        let run = session.reconnectHooksRuns
        session.reconnectHooksRunning = run
        inbox.hold()
        userCode.run {
            for hook in hooks { hook() }
            // Behind every call the hooks made (each one reached the client queue before the hook returned).
            self.queue.async { self.reconnectHooksFinished(run) }
        }
    }

    /// The app's hooks of run `run` returned: the reset goes on and the held messages are handled.
    private func reconnectHooksFinished(_ run: Int) {
        guard session.reconnectHooksRunning == run else { return }
        session.reconnectHooksRunning = nil
        reconnectHooksRan()
        inbox.release()
        drainInbox()
    }

    /// The inbox held as many messages as ``Configuration/maxMessagesHeldForQuiescence`` while the app's reconnect
    /// hooks ran: the reset goes on without them (what they call later goes out behind the re-sent methods).
    func stopWaitingForReconnectHooks() {
        guard session.reconnectHooksRunning != nil else { return }
        report(.limitReached(
            "held \(configuration.maxMessagesHeldForQuiescence) messages while onReconnect hooks ran; "
                + "re-sending methods and subscriptions without waiting for the hooks"
        ))
        session.reconnectHooksRunning = nil
        reconnectHooksRan()
        inbox.release()
        drainInbox()
    }

    private func reconnectHooksRan() {
        sendInvocations(session.methods.reconnectHooksRan())
        for record in session.subscriptions.recordsNotSent() {
            send(.sub(id: record.id, name: record.name, params: record.params))
            session.subscriptions.markSent(record.id)
        }
    }

    /// The server sent `connected` (LC `_livedata_connected`). After a reconnect the cache is reset at quiescence:
    /// data is held until every previously ready subscription is ready again and every method sent on this socket
    /// has its `updated`; then the held messages are applied as one transaction that replaces the cache (documents
    /// written by pending stubs keep their stub values), so only real differences are reported.
    func sessionDidConnect(isReconnect: Bool) {
        dispatchPrecondition(condition: .onQueue(queue))
        // The first connection after a restart reconciles the restored cache the same way.
        let reconciling = startReconciliationIfPending()
        guard isReconnect || reconciling else { return }
        // What the abandoned session held is discarded: the new session sends everything again.
        var hold = QuiescenceHold(resetting: true)
        session.afterUpdate.removeAll()
        if !reconciling { _ = session.subscriptions.startRevival() }
        let (visibleAtQuiescence, blocking) = session.methods.reconnectQuiescence()
        session.methodsBlockingQuiescence = Set(blocking)
        hold.methodsVisibleAtQuiescence = visibleAtQuiescence
        session.quiescence = hold
        endQuiescenceIfPossible()
    }

    /// Runs `hook` on every new socket, right after `connect` and before unanswered methods and subscriptions are
    /// sent again (Meteor's `DDP.onReconnect`): methods it calls go out first. A hook with the same name replaces the
    /// previous one; hooks run in name order, after the resume login.
    ///
    /// Hooks run on the callback queue and may call any API. Until they return, the new session's messages wait (in
    /// order, up to ``Configuration/maxMessagesHeldForQuiescence``; past it the client stops waiting for the hooks and
    /// reports ``DDPError/Code/limitReached``): keep them short.
    public func onReconnect(_ name: String, _ hook: @escaping @Sendable () -> Void) {
        queue.async { self.session.userReconnectHooks[name] = hook }
    }

    /// The session ended (connection lost or disconnected). Everything is kept for the next connection.
    func sessionDidDisconnect() {
        dispatchPrecondition(condition: .onQueue(queue))
    }

    // MARK: - Quiescence

    /// Starts holding data messages (a wait method went out). A hold already in place stays as it is.
    func beginQuiescence() {
        if session.quiescence == nil { session.quiescence = QuiescenceHold(resetting: false) }
    }

    /// Holds a data message until quiescence, noting the subscriptions and methods it settles (LC `_livedata_data`).
    func holdUntilQuiescence(_ message: IncomingMessage) {
        dispatchPrecondition(condition: .onQueue(queue))
        session.quiescence!.messages.append(message)
        switch message {
        case .message(.ready(let ids)): session.subscriptions.stopReviving(ids)
        case .message(.nosub(let id, _)): session.subscriptions.stopReviving([id])
        case .message(.updated(let ids)): session.methodsBlockingQuiescence.subtract(ids)
        default: break
        }
        if session.quiescence!.messages.count >= configuration.maxMessagesHeldForQuiescence, session.isWaitingForQuiescence {
            stopWaitingForQuiescence()
        }
        endQuiescenceIfPossible()
    }

    /// The hold reached its limit: the subscriptions and methods it waits for no longer count, so the held messages
    /// are applied now and later ones as they come.
    private func stopWaitingForQuiescence() {
        let subscriptions = session.subscriptions.stopRevivingAll()
        let methods = session.methodsBlockingQuiescence
        session.methodsBlockingQuiescence = []
        report(.limitReached(
            "held \(configuration.maxMessagesHeldForQuiescence) data messages waiting for quiescence "
                + "(subscriptions not ready: \(subscriptions.count), methods without updated: \(methods.count)); applying them now"
        ))
    }

    /// At quiescence, processes the held messages in order into one cache transaction (replacing the cache after a
    /// reconnect), then queues the data-visible callbacks of methods that are not re-sent.
    func endQuiescenceIfPossible() {
        guard let hold = session.quiescence, !session.isWaitingForQuiescence else { return }
        session.quiescence = nil
        store.hold(resetting: hold.resetting)
        if hold.resetting {
            session.serverDocuments.sessionReset()
            session.undeclaredCollections.reset()
        }
        for id in hold.methodsVisibleAtQuiescence {
            runAfterUpdate { [weak self] in self?.methodDataBecameVisible(id) }
        }
        for message in hold.messages { processDataMessage(message) }
        // Methods that are not re-sent get no `updated` from the new session: their documents take the server's
        // version now.
        for id in hold.methodsVisibleAtQuiescence { releaseDocumentsWritten(byMethod: id) }
        store.release(keeping: hold.resetting ? session.serverDocuments.keys : [])
        if hold.resetting { reconciliationApplied() }
    }
}
