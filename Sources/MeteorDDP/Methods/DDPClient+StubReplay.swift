import Dispatch
import EJSON

/// ``PendingStubMode/rebase``: the pending stubs replayed over the server's newest data (``StubReplays`` decides when
/// and which; this runs them).
extension DDPClient {
    /// Replays the pending stubs a change concerns, if a replay is due: in one transaction with everything queued for
    /// the cache that the buffer's queue has not begun to apply, the documents concerned are put back to the
    /// server's version and the stubs concerned run again, in call order, with their parameters and seeds
    /// (``StubReplays`` chooses them). Readers see the result only, never the server's version without the stubs; a
    /// document the replay leaves as it was posts no change. Called on the client queue at the end of each burst of
    /// incoming frames and when quiescence is applied.
    func replayPendingStubsIfDue(attempt: Int = 0) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard core.stubReplayIsDue else { return }
        let stubs = stubs.withLockedValue { $0 }
        var replayed = 0
        /// The runs of the last round, recorded once the transaction has committed (so that its notification does not
        /// wait for the bookkeeping).
        var lastRuns: [ReplayRun] = []
        /// The calls whose replay started throwing in this transaction, with the error (reported once it committed).
        var failures: [String: (name: String, error: any Error)] = [:]
        let applied = store.flushIfFree { [database] in
            var newlyPending: [DocumentKey] = []
            for round in 1... {
                guard case .replayRound(let plan)? = decide(.replayRoundRequested(stubNamed: { stubs[$0] })).first
                else {
                    break
                }
                database.apply(plan.resets.map { DataUpdate.replaced($0.0, $0.1) })
                var escaped: [DocumentKey] = []
                var runs: [ReplayRun] = []
                runs.reserveCapacity(plan.calls.count)
                for (call, stub) in plan.calls {
                    let context = MethodInvocationContext(
                        methodName: call.name, params: call.params, enclosing: nil, client: self,
                        randomSeed: call.randomSeed, isReplay: true)
                    let run = database.performUpdatesRecordingOriginals(recordingReads: true) {
                        try MethodInvocationContext.$current.withValue(context) { try stub(context) }
                    }
                    for (key, _) in run.originals {
                        if !plan.documents.contains(key) { escaped.append(key) }
                        if !core.session.serverDocuments.contains(key) { newlyPending.append(key) }
                    }
                    runs.append(ReplayRun(call: call, run: run, seed: context.randomSeedIfUsed))
                }
                replayed += plan.calls.count
                // A replay that wrote a document outside the plan's changed it under calls the plan left out: those
                // the document concerns run again in this transaction (every call, after two such rounds), with this
                // round's writes and reads recorded first.
                guard !escaped.isEmpty, !plan.isEveryCall else {
                    lastRuns = runs
                    break
                }
                record(runs, failures: &failures, escaped: escaped, round: round)
            }
            // Documents a replay wrote for the first time hold pending writes from now on, as the stubs' others do.
            if !newlyPending.isEmpty { database.setPendingWrites(newlyPending, true) }
        }
        guard applied else {
            // Another thread holds the cache's write lock (an app's transaction, which may be waiting for this very
            // queue) or the buffer's queue is about to apply a batch (it waits for that lock). This queue never waits
            // for either: it tries again once the buffer's queue has done what it was doing (twice), then a
            // millisecond later on the client's scheduler (the next burst of frames tries too).
            if attempt < 2 {
                updateBuffer.afterCurrentWork { [weak self] in
                    guard let self else { return }
                    self.queue.async { self.replayPendingStubsIfDue(attempt: attempt + 1) }
                }
            } else {
                _ = scheduler.schedule(after: .milliseconds(1)) { [weak self] in
                    guard let self else { return }
                    self.queue.async { self.replayPendingStubsIfDue() }
                }
            }
            return
        }
        record(lastRuns, failures: &failures)
        if replayed > 0 {
            let runs = Int64(replayed)
            emitMetrics { $0.stubReplays.increment(by: runs) }
        }
        for (id, failure) in failures {
            report(.stubReplayFailed(failure.name, methodID: id, failure.error))
        }
        if replayed > 0 { logger.trace("replayed pending stubs", metadata: ["calls": "\(replayed)"]) }
    }

    /// One stub's replay, as the bookkeeping needs it.
    struct ReplayRun {
        let call: StubReplays.Call
        let run: Database.RecordedRun<EJSONValue?>
        /// The seed the run used.
        let seed: String?
    }

    /// Records a round's replays: the documents they wrote are kept aside from now on (their versions from before are
    /// the server's: the cache holds the server's version of every document no stub wrote), what they read, and which
    /// started throwing (`failures`, reported by the caller; a later success in the same replay takes one out).
    /// `escaped`: documents the round wrote outside its plan (the calls they concern run again).
    private func record(
        _ runs: [ReplayRun], failures: inout [String: (name: String, error: any Error)], escaped: [DocumentKey] = [],
        round: Int = 0
    ) {
        var errors: [String: (name: String, error: any Error)] = [:]
        let replayed = runs.map { replay in
            var failed = false
            if case .failure(let error) = replay.run.value {
                errors[replay.call.id] = (replay.call.name, error)
                failed = true
            } else {
                failures[replay.call.id] = nil
            }
            return ClientCore.ReplayedStub(
                id: replay.call.id, originals: replay.run.originals, failed: failed, randomSeed: replay.seed,
                reads: replay.run.reads!)
        }
        for action in decide(.replayRoundRan(replayed, escaped: escaped, round: round)) {
            guard case .replayStartedFailing(let id) = action else {
                preconditionFailure("Internal inconsistency: a replay round's record leads to its failures only")
            }
            failures[id] = errors[id]
        }
    }

    /// Runs a new call's stub for ``PendingStubMode/rebase`` in debug builds: twice over the same state, inside the
    /// caller's transaction, keeping the second run's writes. Returns the stub's value, the context whose seed the
    /// call sends, whether the two runs differed (one threw and the other did not, or their writes differ) and the
    /// documents whose writes differed.
    func runStubTwice(_ stub: MethodStub, _ name: String, params: [EJSONValue], context: MethodInvocationContext)
        -> (
            value: Result<EJSONValue?, any Error>, context: MethodInvocationContext, differs: Bool,
            differing: [DocumentKey]
        )
    {
        // The first run is the one undone: calls its stub makes run their stubs but complete nothing.
        let trial = MethodInvocationContext(
            methodName: name, params: params, enclosing: nil, client: self, randomSeed: context.randomSeedIfUsed,
            isReplay: true)
        let first = database.performUpdatesRecordingOriginals {
            try MethodInvocationContext.$current.withValue(trial) { try stub(trial) }
        }
        let firstWrites = Dictionary(first.originals.map { ($0.0, database.document($0.0)?.fields) }) { a, _ in a }
        // Back to the state before the first run, then the same call again.
        database.apply(first.originals.map { DataUpdate.replaced($0.0, $0.1) })
        let again = MethodInvocationContext(
            methodName: name, params: params, enclosing: nil, client: self, randomSeed: trial.randomSeedIfUsed)
        let second = database.performUpdatesRecordingOriginals {
            try MethodInvocationContext.$current.withValue(again) { try stub(again) }
        }
        let secondWrites = Dictionary(second.originals.map { ($0.0, database.document($0.0)?.fields) }) { a, _ in a }
        var differing = Set(firstWrites.keys).symmetricDifference(secondWrites.keys)
        for (key, fields) in firstWrites where secondWrites[key].map({ $0 != fields }) == true {
            differing.insert(key)
        }
        var outcomesDiffer = false
        switch (first.value, second.value) {
        case (.success, .failure), (.failure, .success): outcomesDiffer = true
        default: break
        }
        return (
            second.value, again, outcomesDiffer || !differing.isEmpty,
            differing.sorted { $0.documentID < $1.documentID }
        )
    }
}
