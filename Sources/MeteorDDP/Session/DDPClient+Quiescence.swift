import Dispatch

/// Quiescence as the driver applies it (LC `_livedata_data`, `_livedata_connected`): data messages held until every
/// revived subscription is ready and every blocking method has its `updated`, then applied as one transaction
/// (`ClientCore+Quiescence.swift` decides; this performs ``ClientCore/Action/applyQuiescence(_:)``).
extension DDPClient {
    /// At quiescence, processes the held messages in order into one cache transaction (replacing the cache after a
    /// reconnect), then queues the data-visible work of methods that are not re-sent.
    func applyQuiescence(_ hold: QuiescenceHold) {
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
        handle(hold.resetting ? .sessionResetApplied : .sessionChangesRequested)
    }
}
