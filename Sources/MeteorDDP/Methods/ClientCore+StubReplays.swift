import EJSON

/// ``PendingStubMode/rebase`` as events of the core: the pending calls kept for replay, the replay that is due, and
/// what each replay showed (``StubReplays`` decides; the client runs the stubs, in `DDPClient+StubReplay.swift`).
extension ClientCore {
    /// Whether pending stubs are replayed over the server's newer data (``PendingStubMode/rebase``).
    var rebasesStubs: Bool { session.stubReplays.isOn }

    /// Whether a replay is due (a document a pending stub wrote or read changed).
    var stubReplayIsDue: Bool { session.stubReplays.isDue }

    /// A call's stub ran, or a call was restored from the offline store (its stub looked up by name when replayed):
    /// it is replayed until it completes.
    mutating func stubCallMade(_ call: StubReplays.Call) {
        session.stubReplays.callMade(call)
    }

    /// The next round of the replay that is due, if any: the documents to put back to the server's version and the
    /// calls to replay, in call order (``StubReplays/takePlan(documents:isPending:stubNamed:)``).
    mutating func takeReplayPlan(stubNamed: (String) -> MethodStub?) -> StubReplays.Plan? {
        let methods = session.methods
        return session.stubReplays.takePlan(
            documents: session.serverDocuments, isPending: { methods.name(of: $0) != nil }, stubNamed: stubNamed)
    }

    /// Round `round` of a replay wrote documents outside its plan (`escaped`): the calls they concern run again in the
    /// same transaction, every pending call from the second such round on.
    mutating func replayWroteOutsideItsPlan(_ escaped: [DocumentKey], round: Int) {
        session.stubReplays.noteChanged(escaped)
        if round >= 2 { session.stubReplays.noteEverythingChanged() }
    }

    /// Call `id`'s stub was replayed: the documents it wrote are kept aside from now on (their versions from before
    /// are the server's), what it read and whether it threw are recorded. Returns whether it started throwing now (the
    /// app is told).
    mutating func stubReplayed(
        _ id: String, originals: [(DocumentKey, EJSONObject?)], failed: Bool, randomSeed: String?, reads: CacheReads
    ) -> Bool {
        stubRan(methodID: id, originals: originals)
        return session.stubReplays.replayed(id, failed: failed, randomSeed: randomSeed, reads: reads)
    }

    /// A replay round's stubs ran: each is recorded (the calls whose replay started throwing are handed out, to be
    /// reported once the transaction committed), and documents written outside the round's plan (`escaped`) make the
    /// calls they concern run again.
    mutating func replayRoundRanActions(_ runs: [ReplayedStub], escaped: [DocumentKey], round: Int) -> [Action] {
        var actions: [Action] = []
        for run in runs {
            let started = stubReplayed(
                run.id, originals: run.originals, failed: run.failed, randomSeed: run.randomSeed, reads: run.reads)
            if started { actions.append(.replayStartedFailing(id: run.id)) }
        }
        if !escaped.isEmpty { replayWroteOutsideItsPlan(escaped, round: round) }
        return actions
    }
}
