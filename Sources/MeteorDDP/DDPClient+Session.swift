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
        let reset = core.socketReset()
        for record in reset.stoppedSubscriptions { record.shared.update(.stopped) }
        for invocation in reset.failedCalls {
            logger.debug(
                "method failed by the reconnect (noRetry)",
                metadata: ["method": "\(invocation.name)", "id": "\(invocation.id)"])
        }
        if let token = reset.resumeToken { resumeLogin(token: token) }
        guard let (run, hooks) = reset.userHooks else { return reconnectHooksRan() }
        inbox.hold()
        userCode.run {
            for hook in hooks { hook() }
            // Behind every call the hooks made (each one reached the client queue before the hook returned).
            self.queue.async { self.reconnectHooksFinished(run) }
        }
    }

    /// The app's hooks of run `run` returned: the reset goes on and the held messages are handled.
    private func reconnectHooksFinished(_ run: Int) {
        guard core.reconnectHooksFinished(run: run) else { return }
        resumeAfterReconnectHooks()
    }

    /// The inbox held as many messages as ``Configuration/maxMessagesHeldForQuiescence`` while the app's reconnect
    /// hooks ran: the reset goes on without them (what they call later goes out behind the re-sent methods).
    func stopWaitingForReconnectHooks() {
        guard core.stopWaitingForReconnectHooks() else { return }
        report(
            .limitReached(
                "held \(configuration.maxMessagesHeldForQuiescence) messages while onReconnect hooks ran; "
                    + "re-sending methods and subscriptions without waiting for the hooks"
            ))
        resumeAfterReconnectHooks()
    }

    /// The reset goes on after the app's hooks: methods and subscriptions go out, then the messages held meanwhile
    /// are handled.
    private func resumeAfterReconnectHooks() {
        reconnectHooksRan()
        inbox.release()
        drainInbox()
    }

    private func reconnectHooksRan() {
        let (calls, subscriptions) = core.reconnectHooksRan()
        send(calls: calls)
        for record in subscriptions { send(.sub(id: record.id, name: record.name, params: record.params)) }
    }

    /// The server sent `connected` (LC `_livedata_connected`). After a reconnect the cache is reset at quiescence:
    /// data is held until every previously ready subscription is ready again and every method sent on this socket
    /// has its `updated`; then the held messages are applied as one transaction that replaces the cache (documents
    /// written by pending stubs keep their stub values), so only real differences are reported.
    func sessionDidConnect(isReconnect: Bool) {
        dispatchPrecondition(condition: .onQueue(queue))
        // The first connection after a restart reconciles the restored cache the same way.
        let reconciling = startReconciliationIfPending()
        if let hold = core.sessionConnected(isReconnect: isReconnect, reconciling: reconciling) {
            applyQuiescence(hold)
        }
    }

    /// Runs `hook` on every new socket, right after `connect` and before unanswered methods and subscriptions are
    /// sent again (Meteor's `DDP.onReconnect`): methods it calls go out first. A hook with the same name replaces the
    /// previous one; hooks run in name order, after the resume login.
    ///
    /// Hooks run on the callback queue and may call any API. Until they return, the new session's messages wait (in
    /// order, up to ``Configuration/maxMessagesHeldForQuiescence``; past it the client stops waiting for the hooks and
    /// reports ``DDPError/Code/limitReached``): keep them short.
    public func onReconnect(_ name: String, _ hook: @escaping @Sendable () -> Void) {
        queue.async { self.core.setReconnectHook(name, hook) }
    }

    // MARK: - Quiescence

    /// Holds a data message until quiescence (LC `_livedata_data`); applies the held messages when it comes.
    func holdUntilQuiescence(_ message: consuming IncomingMessage) {
        dispatchPrecondition(condition: .onQueue(queue))
        let outcome = core.holdUntilQuiescence(message)
        if let (subscriptions, methods) = outcome.limitReached {
            report(
                .limitReached(
                    "held \(configuration.maxMessagesHeldForQuiescence) data messages waiting for quiescence "
                        + "(subscriptions not ready: \(subscriptions), methods without updated: \(methods)); "
                        + "applying them now"
                ))
        }
        if let hold = outcome.quiescent { applyQuiescence(hold) }
    }

    /// At quiescence, processes the held messages in order into one cache transaction (replacing the cache after a
    /// reconnect), then queues the data-visible callbacks of methods that are not re-sent.
    func applyQuiescence(_ hold: QuiescenceHold) {
        store.hold(resetting: hold.resetting)
        for id in hold.methodsVisibleAtQuiescence {
            runAfterUpdate { [weak self] in self?.methodDataBecameVisible(id) }
        }
        for message in hold.messages { processDataMessage(message) }
        // Methods that are not re-sent get no `updated` from the new session: their documents take the server's
        // version now.
        for id in hold.methodsVisibleAtQuiescence { releaseDocumentsWritten(byMethod: id) }
        store.release(keeping: hold.resetting ? core.session.serverDocuments.keys : [])
        if hold.resetting { reconciliationApplied() }
    }
}
