/// Quiescence as events of the core (LC `_livedata_connected`, `_livedata_data`, `_runAfterUpdateCallbacks`): after a
/// reconnect, or while a `wait` method runs, data messages are held, in arrival order, until every revived
/// subscription is ready again and every blocking method has its `updated`; then they are applied as one transaction.
/// These functions decide, through ``ClientCore/handle(_:)``; ``DDPClient`` applies the hold
/// (`DDPClient+Actions.swift`).
extension ClientCore {
    /// What the client does after a data message was held.
    struct QuiescenceOutcome {
        /// The hold reached ``ClientCore/maxMessagesHeldForQuiescence`` while still waiting for this many revived
        /// subscriptions and blocking methods: they no longer count, and the client reports it.
        var limitReached: (subscriptions: Int, methods: Int)?
        /// Quiescence came: the held messages to apply now, in order, as one transaction.
        var quiescent: QuiescenceHold?
    }

    /// Whether data messages are being held.
    var isHoldingForQuiescence: Bool { session.quiescence != nil }

    /// `connected` on a new socket. After a reconnect, or at the first connection of a client that restored a cache
    /// (`reconciling`), the new session sends everything again: what it sends is held until quiescence and then
    /// replaces the cache. Calls that had their result but not their data complete at quiescence; calls already sent
    /// on this socket block it. Returns the hold when nothing is awaited (it is applied at once).
    mutating func sessionConnected(isReconnect: Bool, reconciling: Bool) -> QuiescenceHold? {
        guard isReconnect || reconciling else { return nil }
        // What the abandoned session held is discarded.
        var hold = QuiescenceHold(resetting: true)
        session.afterUpdate.removeAll()
        if !reconciling { _ = session.subscriptions.startRevival() }
        // With PendingStubMode.rebase the new session's data shows as soon as the subscriptions are ready, with the
        // pending stubs replayed over it: the calls re-sent on this socket do not hold it back (wait calls still do).
        let (visibleAtQuiescence, blocking) = session.methods.reconnectQuiescence(
            onlyWaitCallsBlock: session.stubReplays.isOn)
        session.methodsBlockingQuiescence = Set(blocking)
        hold.methodsVisibleAtQuiescence = visibleAtQuiescence
        session.quiescence = hold
        return quiescenceIfReached()
    }

    /// A `wait` method went out: data is held until its `updated` (a hold already in place stays as it is).
    mutating func waitMethodSent(_ id: String) {
        session.methodsBlockingQuiescence.insert(id)
        if session.quiescence == nil { session.quiescence = QuiescenceHold(resetting: false) }
    }

    /// A method's `updated` arrived with no hold in place.
    mutating func methodUpdated(_ id: String) {
        session.methodsBlockingQuiescence.remove(id)
    }

    /// Holds a data message, noting the subscriptions and methods it settles. Only while ``isHoldingForQuiescence``.
    mutating func holdUntilQuiescence(_ message: consuming IncomingMessage) -> QuiescenceOutcome {
        var outcome = QuiescenceOutcome()
        switch message {
        case .message(.ready(let ids)): session.subscriptions.stopReviving(ids)
        case .message(.nosub(let id, _)): session.subscriptions.stopReviving([id])
        case .message(.updated(let ids)): session.methodsBlockingQuiescence.subtract(ids)
        default: break
        }
        session.quiescence!.messages.append(message)
        if session.quiescence!.messages.count >= maxMessagesHeldForQuiescence, session.isWaitingForQuiescence {
            let subscriptions = session.subscriptions.stopRevivingAll()
            outcome.limitReached = (subscriptions.count, session.methodsBlockingQuiescence.count)
            session.methodsBlockingQuiescence = []
        }
        outcome.quiescent = quiescenceIfReached()
        return outcome
    }

    /// Ends the hold if nothing is awaited any more (also after a subscription was stopped, or restored subscriptions
    /// are no longer awaited): returns the held messages to apply. Ending a resetting hold starts the new session's
    /// server documents and undeclared collections afresh.
    mutating func quiescenceIfReached() -> QuiescenceHold? {
        guard let hold = session.quiescence, !session.isWaitingForQuiescence else { return nil }
        // A refused offer to resume decides the reset and the new session at once: the login the reset resumes and the
        // calls and subscriptions it sends again are not out yet. A new session's hold waits for them, as when
        // `connected` comes after them (``resendAfterReconnectHooks(held:)`` looks again once they are).
        if hold.resetting, session.resetAwaitingResend != nil { return nil }
        session.quiescence = nil
        if hold.resetting {
            session.serverDocuments.sessionReset()
            session.afterUpdate.dropServerDocumentWaiters()
            if !session.serverDocuments.isEmpty { session.stubReplays.noteEverythingChanged() }
            session.undeclaredCollections.reset()
        }
        return hold
    }
}
