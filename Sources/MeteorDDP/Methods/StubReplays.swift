import EJSON
import OrderedCollections

/// With ``PendingStubMode/rebase``: the pending calls whose stubs are replayed over the server's newest data, in
/// call order, and whether a replay is due. No I/O, confined to the client queue (in the session's state).
///
/// A replay is due when the server's data for a document a pending stub wrote changed (it went to the kept-aside
/// copy, ``ServerDocumentBuffer``), when a call that wrote a document other pending calls also wrote got its
/// `updated` (its effect now comes from the server's copy), and when a new session's data replaced those copies.
/// Nothing else makes one due: with no server change, nothing is replayed.
struct StubReplays {
    /// A pending call as it is replayed.
    struct Call {
        let id: String
        let name: String
        let params: [EJSONValue]
        /// The seed its first run used (every replay makes the same ids); `nil` when it used none.
        var randomSeed: String?
        /// The stub as defined when the call was made; `nil` for a call restored from the offline store (its stub
        /// is looked up by name when it is replayed: the app defines its stubs after creating the client).
        let stub: MethodStub?
        /// Whether its last run threw (a failure is reported when it starts, not at every replay; a stub that threw
        /// when the call was made is not reported when its replay throws too).
        var lastReplayFailed = false
    }

    /// What one replay does, in one transaction: put every document in `resets` back to the server's version, then
    /// run every stub in `calls`, in order.
    struct Plan {
        /// Documents pending stubs wrote, with the server's fields (`nil`: the server has no such document).
        let resets: [(DocumentKey, EJSONObject?)]
        /// The calls to replay, in call order, each with its stub.
        let calls: [(call: Call, stub: MethodStub)]
    }

    /// Whether calls are replayed at all (``PendingStubMode/rebase``).
    let isOn: Bool
    /// The pending calls with a stub, in call order. Confined to the client queue.
    private(set) var calls: OrderedDictionary<String, Call> = [:]
    /// Whether the kept-aside documents changed since the last replay. Confined to the client queue.
    private(set) var isDue = false

    init(isOn: Bool) {
        self.isOn = isOn
    }

    /// A call's stub ran (a new call, or one restored from the store): it is replayed until the call is done.
    mutating func callMade(_ call: Call) {
        guard isOn else { return }
        calls[call.id] = call
    }

    /// Call `id`'s `updated` arrived (or quiescence came for a call not re-sent): its stub is not replayed again.
    /// `documentsStillKept`: some documents it wrote are still kept aside for other pending calls, so what they show
    /// no longer includes its stub's effect twice (once from the server, once replayed): a replay is due.
    mutating func callDone(_ id: String, documentsStillKept: Bool) {
        guard isOn, calls.removeValue(forKey: id) != nil else { return }
        if documentsStillKept { isDue = true }
    }

    /// Server data went to the kept-aside copy of a stub-written document, or a new session's data replaces the
    /// copies.
    mutating func serverDataChanged() {
        if isOn { isDue = true }
    }

    /// Records how call `id`'s replay went: `true` when it threw now and had not thrown at its previous replay
    /// (the app is told when a stub starts failing). `randomSeed`: the seed the replay used, kept for the next ones
    /// when the first run used none.
    mutating func replayed(_ id: String, failed: Bool, randomSeed: String?) -> Bool {
        guard var call = calls[id] else { return false }
        let started = failed && !call.lastReplayFailed
        call.lastReplayFailed = failed
        if call.randomSeed == nil { call.randomSeed = randomSeed }
        calls[id] = call
        return started
    }

    /// The replay that is due, if any (clearing the due flag).
    ///
    /// Every document the pending stubs wrote is put back to the server's version and every pending stub replayed,
    /// in call order: a stub reads what the stubs before it wrote, whichever documents those were. A document one of
    /// whose writers cannot be replayed (a restored call whose stub the app has not defined) keeps what it shows, as
    /// under Meteor's rule, and so do the other documents of the calls that wrote it, which are not replayed.
    /// - Parameters:
    ///   - documents: The kept-aside documents and their writers.
    ///   - isPending: Whether a call is still pending (one the client no longer has is dropped).
    ///   - stubNamed: The stub the app defined under a name now.
    mutating func takePlan(
        documents: ServerDocumentBuffer, isPending: (String) -> Bool, stubNamed: (String) -> MethodStub?
    ) -> Plan? {
        guard isDue else { return nil }
        isDue = false
        calls.removeAll { !isPending($0.key) }
        var replayable: [(call: Call, stub: MethodStub)] = []
        var frozenCalls: Set<String> = []
        for call in calls.values {
            if let stub = call.stub ?? stubNamed(call.name) {
                replayable.append((call, stub))
            } else {
                frozenCalls.insert(call.id)
            }
        }
        var frozen: Set<DocumentKey> = []
        for key in documents.keys
        where documents.writers(of: key).contains(where: { calls[$0] == nil || frozenCalls.contains($0) }) {
            frozen.insert(key)
        }
        // A call that wrote a frozen document is not replayed, and the other documents it wrote freeze too.
        var grew = !frozen.isEmpty
        while grew {
            grew = false
            for (call, _) in replayable where !frozenCalls.contains(call.id) {
                let wrote = documents.documentsWritten(by: call.id)
                guard wrote.contains(where: frozen.contains) else { continue }
                frozenCalls.insert(call.id)
                frozen.formUnion(wrote)
                grew = true
            }
        }
        replayable.removeAll { frozenCalls.contains($0.call.id) }
        guard !replayable.isEmpty else { return nil }
        let resets = documents.keys.subtracting(frozen).map { ($0, documents.serverFields($0)) }
        return Plan(resets: resets, calls: replayable)
    }
}
