import EJSON

/// Method calls as events of the core (LC `_livedata_result`, `_process_updated`, `_outstandingMethodFinished`,
/// MethodInvoker's `_maybeInvokeCallback`): a call completes once it has its result and its data is visible, and
/// the next block goes out when the first one is done. Every call the core hands out to send has passed the offline
/// store's ``DurabilityGate`` and, for a `wait` call, started holding data until its `updated`.
extension ClientCore {
    typealias Invocation = MethodCoordinator.Invocation

    /// What the client does after a call's result arrived or its data became visible, in this order.
    struct MethodProgress {
        /// No pending call has the id: the client reports a protocol violation.
        var unknown = false
        /// The call whose result arrived now: the app's `onResultReceived` runs.
        var resultArrived: Invocation?
        /// A kept call that has its result but not its data: the result is stored (after a restart it completes
        /// at reconciliation instead of running again).
        var storeResult: Invocation?
        /// The call that completed: its completion runs.
        var completed: Invocation?
        /// The completed call was kept: its record leaves the store.
        var completedWasKept = false
        /// The calls that go out now (the next block).
        var send: [Invocation] = []
    }

    /// Whether a call with this id is pending (made, and not completed).
    func hasOutstandingMethod(_ id: String) -> Bool {
        session.methods.invocations[id] != nil
    }

    /// The id the next call takes (decimal, from "1"): a new call's ``Input/stubRan(_:)`` takes it.
    var nextMethodID: String { session.methods.nextMethodID }

    /// A new call's stub ran (or it has none, or it threw and nothing is sent): the call takes its id, its stub is
    /// kept for replays, and the server's versions of what it wrote are kept aside until its `updated`.
    mutating func stubRanActions(_ run: StubRun) -> [Action] {
        session.methods.takeMethodID(run.id)
        if let call = run.replay { stubCallMade(call) }
        if let originals = run.originals { stubRan(methodID: run.id, originals: originals) }
        return []
    }

    /// The stub of call `id` ran (or threw) having written `originals`' documents: the server's versions of those
    /// are kept aside until the call's `updated`.
    mutating func stubRan(methodID id: String, originals: [(DocumentKey, EJSONObject?)]) {
        session.serverDocuments.stubWrote(methodID: id, originals: originals)
    }

    /// The app made a call (its stub ran); `kept`: its record is on its way to the store. Returns the calls to send
    /// now: it, when it landed in the first block and nothing before it waits for the disk.
    mutating func callMade(_ invocation: Invocation, kept: Bool) -> [Invocation] {
        if kept { durability.keep(invocation.id) }
        return transmitting(session.methods.enqueue(invocation))
    }

    /// A call restored from the offline store at launch.
    mutating func callRestored(_ invocation: Invocation) {
        session.methods.restore(invocation)
        durability.restored(invocation.id)
    }

    /// A `result` (or a result that did not parse, as a failure).
    mutating func methodResultReceived(_ id: String, _ outcome: Result<EJSONValue?, any Error>) -> MethodProgress {
        progress(session.methods.receivedResult(id: id, outcome), resultArrived: true)
    }

    /// The call's `updated` arrived and what it waited for was applied to the cache (or, for a call not re-sent
    /// after a reconnect, quiescence came).
    mutating func methodDataVisible(_ id: String) -> MethodProgress {
        progress(session.methods.dataBecameVisible(id: id), resultArrived: false)
    }

    /// Call `id`'s record is on disk: the calls now free to go, in order (those a reset or a completion took off
    /// the wire meanwhile stay put: the method blocks send them).
    mutating func callBecameDurable(_ id: String) -> [Invocation] {
        var released = durability.becameDurable(id)
        guard !released.isEmpty else { return [] }
        released.removeAll { !session.methods.isSent($0.id) }
        return markedSent(released)
    }

    /// Calls the method blocks put on the wire: those past the durability gate go now.
    mutating func transmitting(_ invocations: [Invocation]) -> [Invocation] {
        guard !invocations.isEmpty else { return [] }
        return markedSent(durability.admit(invocations))
    }

    private mutating func markedSent(_ invocations: [Invocation]) -> [Invocation] {
        for invocation in invocations where invocation.options.wait { waitMethodSent(invocation.id) }
        return invocations
    }

    /// What a call's progress leads to, in order: the app hears of the result, a kept call's answer is stored, a
    /// completed call leaves the store and completes, the next calls go out. For an id no call has, a protocol
    /// violation of `frame`. Static: called on the result of a mutating call of the core
    /// (`methodActions(methodDataVisible(id), …)`), an instance method would borrow a copy of the core across that
    /// mutation, and every collection the mutation then touches would be copied whole (an O(calls in flight) copy per
    /// `updated`: 10,000 calls queued completed 12× slower).
    static func methodActions(_ progress: MethodProgress, id: String, frame: String) -> [Action] {
        if progress.unknown { return [Self.unknownMethod(id, frame: frame)] }
        var actions: [Action] = []
        if let invocation = progress.resultArrived { actions.append(.resultArrived(invocation)) }
        if let invocation = progress.storeResult { actions.append(.storeResult(invocation)) }
        if let invocation = progress.completed {
            if invocation.timeout != nil { actions.append(.cancelTimer(.callDeadline(id: invocation.id))) }
            actions.append(.completeCall(invocation, wasKept: progress.completedWasKept))
        }
        if !progress.send.isEmpty { actions.append(.sendCalls(progress.send)) }
        return actions
    }

    /// A `result` or `updated` for an id no call has: a late answer the client expects (a call failed at the resumed
    /// calls' deadline, or a login a resumed session sent again, whose server may run it twice) is logged; any other
    /// is the server's protocol violation (Meteor's client throws "No callback invoker").
    func unknownAnswerAction(_ id: String, frame: String) -> Action {
        guard !lateAnswersExpected.contains(id) else { return .logLateAnswer(frame: frame, id: id) }
        return Self.unknownMethod(id, frame: frame)
    }

    /// A `result` or `updated` for an id no call has (Meteor's client throws "No callback invoker").
    static func unknownMethod(_ id: String, frame: String) -> Action {
        .report(
            .protocolViolation(
                DDPProtocolViolation(
                    .unexpected(message: frame, reason: "no outstanding method has id \(id)"), frame: id)))
    }

    private mutating func progress(_ outcome: MethodCoordinator.ResultOutcome, resultArrived: Bool) -> MethodProgress {
        var progress = MethodProgress()
        switch outcome {
        case .unknown:
            progress.unknown = true
        case .recorded(let invocation):
            guard resultArrived else { break }
            progress.resultArrived = invocation
            if durability.isKept(invocation.id) { progress.storeResult = invocation }
        case .completed(let invocation, let next):
            if resultArrived { progress.resultArrived = invocation }
            progress.completed = invocation
            progress.completedWasKept = durability.completed(invocation.id)
            progress.send = transmitting(next)
        }
        return progress
    }

    // MARK: - Deadlines

    /// A call's deadline starts when the core takes the call (its stub ran): its timeout, from its options or the
    /// configuration, and the timer to schedule.
    mutating func startDeadline(of invocation: Invocation) -> [Action] {
        let options = invocation.options
        guard let timeout = options.timeout ?? (options.takesDefaultTimeout ? settings.callTimeout : nil) else {
            return []
        }
        invocation.timeout = timeout
        return [.schedule(.callDeadline(id: invocation.id), after: timeout)]
    }

    /// Call `id`'s deadline passed. With no `result` yet, it fails with ``MethodError/Kind/timedOut`` as if the
    /// server had answered so, and an `updated` follows unless its own came (the stub's writes give way to the
    /// server's versions; a `wait` call's barrier and any hold it kept are released). Not on the wire yet (behind a
    /// `wait` call, set aside while the socket is down, or waiting for the disk), it leaves the line and is never
    /// sent. With its `result` but not its `updated`, it completes with that result once the cache has caught up. A
    /// kept call leaves the offline store at once (a restart must not send it again). A late answer is logged.
    mutating func callDeadlineActions(_ id: String) -> [Action] {
        guard let invocation = session.methods.invocations[id] else { return [] }
        var actions: [Action] = []
        if durability.completed(id) { actions.append(.removeStoredCall(id: id)) }
        if invocation.result == nil {
            let (waitedForDisk, released) = durability.withdraw(id)
            let setAside = resumption.framesSetAside.contains { action in
                guard case .sendCalls(let calls) = action else { return false }
                return calls.contains { $0.id == id }
            }
            let failure = MethodError(methodName: invocation.name, kind: .timedOut)
            let outcome = session.methods.resultTimedOut(id: id, failure)
            if outcome.wasOnTheWire, !waitedForDisk, !setAside { lateAnswersExpected.insert(id) }
            actions += Self.methodActions(progress(outcome.outcome, resultArrived: true), id: id, frame: "result")
            let freed = released.filter { session.methods.isSent($0.id) }
            if !freed.isEmpty { actions.append(.sendCalls(markedSent(freed))) }
        } else {
            lateAnswersExpected.insert(id)
        }
        guard !invocation.updatedReceived else { return actions }
        return actions + synthesizedUpdatedActions(id)
    }

    /// An `updated` the client makes up for call `id` (a deadline passed): handled now, even while data is held for
    /// quiescence (it carries no data for the hold to order; the call's app must not wait for the hold), then counted
    /// for the hold as the server's would be (it may end it: the hold's data then comes after the release).
    ///
    /// Its data becomes visible behind the server versions of the sent calls' stub-written documents, as a server's
    /// `updated` would (Meteor's `_runWhenAllServerDocsAreFlushed`), except under a new session's hold: applying that
    /// hold drops such waits (the cache is replaced), and the call would never complete; it waits for the cache
    /// alone then.
    mutating func synthesizedUpdatedActions(_ id: String) -> [Action] {
        let blocking = isHoldingForQuiescence && session.methodsBlockingQuiescence.contains(id)
        var idle = false
        var actions: [Action] = []
        release(writtenBy: id, storeIsIdle: &idle, into: &actions)
        methodUpdated(id)
        if let invocation = session.methods.invocations[id] {
            invocation.updatedReceived = true
            let work = AfterUpdateWork.methodDataVisible(id: id)
            let resetting = session.quiescence?.resetting == true
            if let action = afterUpdateAction(work, afterServerDocuments: !resetting, storeIsIdle: idle) {
                actions.append(action)
            }
        }
        if blocking, let hold = quiescenceIfReached() { actions.append(.applyQuiescence(hold)) }
        return actions
    }
}
