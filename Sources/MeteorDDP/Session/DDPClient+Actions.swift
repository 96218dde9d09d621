import Dispatch
import Foundation

/// The one performer of what the core decides (``ClientCore/handle(_:)``): each ``ClientCore/Action`` in order, on
/// the client queue, after the mutation that returned it. A performer that has something to tell the core (hooks
/// with nothing to run) hands it back through ``ClientCore/handle(_:)`` too.
extension DDPClient {
    /// Hands `input` to the core and performs what it decides.
    func handle(_ input: ClientCore.Input) {
        dispatchPrecondition(condition: .onQueue(queue))
        run(decide(input))
    }

    func run(_ actions: consuming [ClientCore.Action]) {
        switch actions.count {
        case 0: return
        case 1: run(actions.removeLast())
        default:
            // Each action moved out (a trivial one left in its place) and consumed: its payload (a cache update's key
            // and fields above all) is never copied on the way.
            for index in actions.indices {
                let action = actions.withUnsafeMutableBufferPointer { buffer in
                    let slot = buffer.baseAddress! + index
                    defer { slot.initialize(to: .pushCacheUpdates) }
                    return slot.move()
                }
                run(action)
            }
        }
    }

    private func run(_ action: consuming ClientCore.Action) {
        switch consume action {
        case .openTransport(let generation):
            emitMetrics { $0.connectionAttempts.increment() }
            openTransport(generation: generation)
        case .closeTransport:
            connection?.close()
            connection = nil
        case .forgetTransport: connection = nil
        case .endSession:
            // Past the socket-open check of `send(_:)`: the core has already let go of the session.
            let goodbye = EJSON.stringify(ClientMessage.disconnect.ejsonValue)
            if connection != nil { countSent(goodbye) }
            connection?.send(goodbye)
            connection?.closeAfterSending()
            connection = nil
        case .logSessionResumed(let session):
            logger.info("session resumed: nothing sent or downloaded again", metadata: ["session": "\(session)"])
        case .send(let message): send(message)
        case .sendCalls(let invocations): send(calls: invocations)
        case .resultArrived(let invocation):
            callResultArrived(invocation)
            notifyResultReceived(invocation)
        case .storeResult(let invocation): persistResult(invocation)
        case .pendingWritesSettled(let token, let closed): pendingWritesSettled(token, closed: closed)
        case .completeCall(let invocation, let wasKept):
            callEnded(invocation)
            run(decide(.callCompleted(id: invocation.id, wasKept: wasKept)))
            complete(invocation)
        case .applyToCache(let update): store.enqueue(update)
        case .dataNotCached(let routing, let key): perform(routing, key: key)
        case .releaseDocuments(let released): apply(released)
        case .pushCacheUpdates: store.push()
        case .applyQuiescence(let hold): applyQuiescence(hold)
        case .persistSessionChanges: run(decide(.sessionChangesRequested))
        case .replayPendingStubs: replayPendingStubsIfDue()
        case .replayRound, .replayStartedFailing:
            preconditionFailure("Internal inconsistency: a replay's actions are taken by the replay")
        case .storeSessionChanges(let changes, let subscriptions):
            guard let persistence else { break }
            persistence.writer.serverDocumentsChanged(changes)
            if let subscriptions { persistence.writer.subscriptionsChanged(subscriptions) }
        case .removeStoredCall(let id): persistence?.writer.methodRemoved(id)
        case .judgeRestoredCall(let id, let effects, let waited): judgeRestoredCall(id, effects, waited: waited)
        case .restoredCallAwaitsServerData(let id): persistence?.restoredCalls.awaitServerData(for: id)
        case .restoredCallJudged(let id, let match):
            persistence?.restoredCalls.noteServerVersions(of: id, matchStub: match)
        case .subscribed(let record, let isNew, let state):
            if isNew { subscriptionStarted(record.shared) }
            // A handle made inside a transaction that joined another's subscription follows its state.
            if let state, record.shared !== state { state.follow(record.shared) }
        case .logUnsubscribed(let record):
            logger.debug("unsubscribed", metadata: ["name": "\(record.name)", "id": "\(record.id)"])
        case .settleSubscription(let record, let status):
            if status != .ready { subscriptionEnded(record.shared) }
            if case .failed(let error) = status {
                logger.debug(
                    "subscription failed", metadata: ["name": "\(record.name)", "error": "\(error.meteorError)"])
            }
            record.shared.update(status)
        case .logLateAnswer(let frame, let id):
            guard admitsDebugLine(.lateAnswer(frame)) else { break }
            logger.debug("\(frame) for a call already settled without it ignored", metadata: ["id": "\(id)"])
        case .logUnknownSubscription(let frame, let id):
            guard admitsDebugLine(.unknownSubscription(frame)) else { break }
            logger.debug("\(frame) for an unknown subscription ignored", metadata: ["id": "\(id)"])
        case .performAfterUpdate(let work): perform(work)
        case .requestFlush(let ticket): requestFlush(ticket)
        case .schedule(let timer, let delay): schedule(timer, after: delay)
        case .cancelTimer(let timer): cancelTimer(timer)
        case .waitToRetry(let retryCount, let delay, let reason):
            logger.info(
                "reconnecting", metadata: ["retryCount": "\(retryCount)", "delay": "\(delay)", "reason": "\(reason)"])
            schedule(.retry, after: delay)
            let retryTime = scheduler.now.addingTimeInterval(delay.timeInterval)
            publish(ConnectionStatus(state: .waiting, retryCount: retryCount, retryTime: retryTime, reason: reason))
        case .publishStatus(let status): publish(status)
        case .report(let error): report(error)
        case .logSessionEstablished(let session, let version, let isReconnect):
            logger.debug(
                "connected", metadata: ["session": "\(session)", "version": "\(version)", "reconnect": "\(isReconnect)"]
            )
        case .logCallsFailedByReset(let invocations):
            for invocation in invocations {
                logger.debug(
                    "method failed by the reconnect (noRetry)",
                    metadata: ["method": "\(invocation.name)", "id": "\(invocation.id)"])
            }
        case .resumeLogin(let token): resumeLogin(token: token)
        case .accountChanged(let account): accountChanged(account)
        case .loggedOut(let userID, let reason): loggedOut(userID: userID, reason: reason)
        case .runReconnectHooks(let run, let hooks): runReconnectHooks(run, hooks)
        case .releaseHeldMessages:
            inbox.release()
            drainInbox()
        case .closed(let closing): closed(closing)
        }
    }

    /// A new socket's app hooks run on the callback queue, the socket's incoming messages held meanwhile (so the new
    /// session is handled in Meteor's order; the socket's thread never waits for them). No hooks: the run is over.
    private func runReconnectHooks(_ run: Int, _ hooks: [@Sendable () -> Void]) {
        guard !hooks.isEmpty else { return handle(.reconnectHooksFinished(run: run)) }
        inbox.hold()
        userCode.run {
            for hook in hooks { hook() }
            // Behind every call the hooks made (each one reached the client queue before the hook returned).
            self.queue.async { self.handle(.reconnectHooksFinished(run: run)) }
        }
    }

    /// `close()` took effect: pending calls fail, subscriptions stop, the streams end.
    private func closed(_ closing: ClientCore.Closing) {
        // A closed client logs nobody in (the core ended its logins; a stored account's resume may not even have been
        // sent): a login waiting for its user's document fails.
        endUserDocumentWaits()
        awaitedCalls.withLockedValue { $0.removeAll() }
        for invocation in closing.failedCalls {
            let failure = MethodError(methodName: invocation.name, kind: .clientClosed)
            if metricTimings.callsStartedAt[invocation.id] != nil { emitMetrics { $0.callCompleted(.clientClosed) } }
            let completion = invocation.completion
            userCode.run { completion(.failure(failure)) }
        }
        metricsClosed()
        for record in closing.stoppedSubscriptions { record.shared.update(.stopped) }
        run(decide(.restoredCallsJudgementDue(force: true)))
        persistence?.restoredCalls.clientClosed()
        statusBroadcaster.finish()
        errorBroadcaster.finish()
        accountBroadcaster.finish()
        loginEventBroadcaster.finish()
    }

    /// Quiescence as the client applies it (LC `_livedata_data`, `_livedata_connected`; `ClientCore+Quiescence.swift`
    /// decides): at quiescence, processes the held messages in order into one cache transaction (replacing the cache
    /// after a reconnect), then queues the data-visible work of methods that are not re-sent.
    private func applyQuiescence(_ hold: QuiescenceHold) {
        store.hold(resetting: hold.resetting)
        for id in hold.methodsVisibleAtQuiescence { runAfterUpdate(.methodDataVisible(id: id)) }
        for message in hold.messages { handleSessionMessage(message, held: true) }
        // Methods that are not re-sent get no `updated` from the new session: their documents take the server's
        // version now.
        for id in hold.methodsVisibleAtQuiescence {
            handle(.callSettledAtQuiescence(id: id, storeIsIdle: store.isIdle))
        }
        let keeping = hold.resetting ? core.session.serverDocuments.keys : []
        if hold.resetting, core.offline.pendingReconciliation {
            // The restored cache is reconciled in this transaction: its data is no longer only the offline store's.
            store.updateMetadataWithNextFlush { $0.setFromCache(false) }
        }
        if core.stubReplayIsDue {
            // PendingStubMode.rebase: the release and the replay are applied here, in one transaction (the buffer's
            // queue is not woken to apply the release on its own): the new session's data with the pending stubs
            // over it.
            store.releaseForInlineFlush(keeping: keeping)
            replayPendingStubsIfDue()
        } else {
            store.release(keeping: keeping)
        }
        if hold.resetting { handle(.sessionResetApplied) }
        handle(.sessionChangesRequested)
    }
}
