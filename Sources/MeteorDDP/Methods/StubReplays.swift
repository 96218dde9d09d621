import EJSON
import OrderedCollections

/// With ``PendingStubMode/rebase``: the pending calls whose stubs are replayed over the server's newest data, in
/// call order, which of them a replay runs, and whether one is due. No I/O, confined to the client queue (in the
/// session's state).
///
/// A replay is due when a document changed under pending stubs: the server's data for a document one of them wrote
/// or read changed (for one they wrote, it went to the kept-aside copy, ``ServerDocumentBuffer``), a call that wrote
/// a document other pending calls also wrote got its `updated` (its effect now comes from the server's copy), or a
/// new session's data replaced the copies. Nothing else makes one due: with no server change, nothing is replayed.
///
/// A replay runs the calls the changed documents concern, not every pending call: those that wrote or read one of
/// them, then those that wrote or read a document those calls wrote, and so on. The calls it leaves out read and
/// wrote none of the documents it puts back or writes, so running them again would give what they gave before: the
/// cache becomes what a replay of every pending call would make it, at the cost of the calls concerned. (A call whose
/// reads are not known yet, one restored from the offline store before its first replay, is concerned by every
/// change.)
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
        /// What its last run read from the cache, but the documents it wrote (they lead to it as their writer);
        /// `nil` when no run of it has been seen (a call restored from the offline store, before its first replay).
        var reads: CacheReads? = nil
    }

    /// What one replay does, in one transaction: put every document in `resets` back to the server's version, then
    /// run every stub in `calls`, in order.
    struct Plan {
        /// Documents pending stubs wrote, with the server's fields (`nil`: the server has no such document).
        let resets: [(DocumentKey, EJSONObject?)]
        /// The calls to replay, in call order, each with its stub.
        let calls: [(call: Call, stub: MethodStub)]
        /// The documents the plan concerns: those that changed and those its calls wrote before. A run that writes
        /// another document changed it under the calls left out (``noteChanged(_:)``, then another plan).
        let documents: Set<DocumentKey>
        /// Whether it replays every pending call (no other call can be concerned by what it writes).
        let isEveryCall: Bool
    }

    /// Whether calls are replayed at all (``PendingStubMode/rebase``).
    let isOn: Bool
    /// The pending calls with a stub, in call order. Confined to the client queue.
    private(set) var calls: OrderedDictionary<String, Call> = [:]
    /// The documents that changed under pending stubs since the last replay. Confined to the client queue.
    private var changed: Set<DocumentKey> = []
    /// Whether the next replay runs every pending call (a new session's data). Confined to the client queue.
    private var everythingChanged = false
    /// The pending calls whose last run read a document by key, by document. Confined to the client queue.
    private var readersOfDocument: [DocumentKey: Set<String>] = [:]
    /// The pending calls whose last run read a whole collection (a query, a count), by collection. Confined to the
    /// client queue.
    private var readersOfCollection: [String: Set<String>] = [:]
    /// The pending calls whose last run listed the collections, or whose reads are not known. Confined to the client
    /// queue.
    private var readersOfEverything: Set<String> = []

    init(isOn: Bool) {
        self.isOn = isOn
    }

    /// Whether a replay is due.
    var isDue: Bool { everythingChanged || !changed.isEmpty }

    /// A call's stub ran (a new call, or one restored from the store): it is replayed until the call is done.
    mutating func callMade(_ call: Call) {
        guard isOn else { return }
        calls[call.id] = call
        index(call.id, call.reads)
    }

    /// Call `id`'s `updated` arrived (or quiescence came for a call not re-sent): its stub is not replayed again.
    /// - Parameters:
    ///   - documentsStillKept: The documents it wrote that are still kept aside for other pending calls; what they
    ///     show must no longer include its stub's effect twice (once from the server, once replayed): they changed.
    ///   - released: The documents it wrote that now show the server's version: changed for the calls that read them.
    mutating func callDone(
        _ id: String, documentsStillKept: some Sequence<DocumentKey>, released: some Sequence<DocumentKey>
    ) {
        guard isOn, let call = calls.removeValue(forKey: id) else { return }
        unindex(id, call.reads)
        changed.formUnion(documentsStillKept)
        for key in released where isRead(key) { changed.insert(key) }
    }

    /// Server data for a document arrived: it went to the document's kept-aside copy (a pending stub wrote it), or
    /// to the cache. Either way, the calls whose stubs read or wrote it are replayed at the next replay.
    mutating func serverDataChanged(_ key: DocumentKey, keptAside: Bool) {
        guard isOn, keptAside || isRead(key) else { return }
        changed.insert(key)
    }

    /// Documents changed under pending stubs other than by server data (a replay wrote them for the first time).
    mutating func noteChanged(_ keys: some Sequence<DocumentKey>) {
        if isOn { changed.formUnion(keys) }
    }

    /// Whether a pending call's last run may have read the document.
    private func isRead(_ key: DocumentKey) -> Bool {
        !readersOfEverything.isEmpty || readersOfDocument[key] != nil || readersOfCollection[key.collectionName] != nil
    }

    /// A new session's data replaces the kept-aside copies: the next replay runs every pending call.
    mutating func noteEverythingChanged() {
        if isOn { everythingChanged = true }
    }

    /// Records how call `id`'s replay went: `true` when it threw now and had not thrown at its previous replay
    /// (the app is told when a stub starts failing). `randomSeed`: the seed the replay used, kept for the next ones
    /// when the first run used none. `reads`: what it read (``Call/reads``).
    mutating func replayed(_ id: String, failed: Bool, randomSeed: String?, reads: CacheReads) -> Bool {
        guard var call = calls[id] else { return false }
        let started = failed && !call.lastReplayFailed
        call.lastReplayFailed = failed
        if call.randomSeed == nil { call.randomSeed = randomSeed }
        if call.reads != reads {
            unindex(id, call.reads)
            index(id, reads)
            call.reads = reads
        }
        calls[id] = call
        return started
    }

    /// The replay that is due, if any (clearing what made it due).
    ///
    /// The documents that changed and those the calls concerned wrote are put back to the server's version, and the
    /// calls concerned replayed, in call order: a stub reads what the stubs before it wrote. A document one of whose
    /// writers cannot be replayed (a restored call whose stub the app has not defined) keeps what it shows, as under
    /// Meteor's rule, and so do the other documents of the calls that wrote it, which are not replayed.
    /// - Parameters:
    ///   - documents: The kept-aside documents and their writers.
    ///   - isPending: Whether a call is still pending (one the client no longer has is dropped).
    ///   - stubNamed: The stub the app defined under a name now.
    mutating func takePlan(
        documents: ServerDocumentBuffer, isPending: (String) -> Bool, stubNamed: (String) -> MethodStub?
    ) -> Plan? {
        guard isDue else { return nil }
        let isEveryCall = everythingChanged
        // Every writer of a reached document is among the concerned (with every call, writers without a replay entry
        // are added: they freeze their documents).
        var (concerned, reached) =
            isEveryCall
            ? (Set(calls.keys).union(documents.documentsWrittenByMethod.keys), documents.keys)
            : callsConcerned(by: changed, documents: documents)
        changed = []
        everythingChanged = false
        // A writer the client no longer has, or whose stub is not defined, freezes its documents; a call that wrote a
        // frozen document is not replayed, and the other documents it wrote freeze too.
        var frozenCalls: Set<String> = []
        var dropped: [String] = []
        for id in concerned {
            guard let index = calls.index(forKey: id) else {
                frozenCalls.insert(id)
                continue
            }
            if !isPending(id) {
                dropped.append(id)
                frozenCalls.insert(id)
            } else if calls.values[index].stub == nil, stubNamed(calls.values[index].name) == nil {
                frozenCalls.insert(id)
            }
        }
        for id in dropped { unindex(id, calls.removeValue(forKey: id)!.reads) }
        var frozen: Set<DocumentKey> = []
        if !frozenCalls.isEmpty {
            for key in reached where documents.writers(of: key).contains(where: frozenCalls.contains) {
                frozen.insert(key)
            }
        }
        var grew = !frozen.isEmpty
        while grew {
            grew = false
            for id in concerned where !frozenCalls.contains(id) {
                let wrote = documents.documentsWritten(by: id)
                guard wrote.contains(where: frozen.contains) else { continue }
                frozenCalls.insert(id)
                frozen.formUnion(wrote)
                grew = true
            }
        }
        if !frozenCalls.isEmpty { concerned.subtract(frozenCalls) }
        guard !concerned.isEmpty else { return nil }
        if !frozen.isEmpty { reached.subtract(frozen) }
        let replayed = concerned.map { calls.index(forKey: $0)! }.sorted().map { index in
            let call = calls.values[index]
            guard let stub = call.stub else { return (call: call, stub: stubNamed(call.name)!) }
            return (call: call, stub: stub)
        }
        let resets = reached.filter(documents.contains).map { ($0, documents.serverFields($0)) }
        return Plan(resets: resets, calls: replayed, documents: reached, isEveryCall: isEveryCall)
    }

    /// The calls the changed documents concern, and the documents reached: a call that wrote or read a reached
    /// document is concerned, and every document a concerned call wrote is reached. Only these calls' footprints are
    /// walked (the indexes lead from a document to its readers; the kept-aside copies to its writers).
    private func callsConcerned(by changed: Set<DocumentKey>, documents: ServerDocumentBuffer) -> (
        calls: Set<String>, documents: Set<DocumentKey>
    ) {
        var concerned: Set<String> = []
        var reached = changed
        var toVisit = Array(changed)
        var collectionsVisited: Set<String> = []
        func concern(_ id: String) {
            guard concerned.insert(id).inserted else { return }
            for key in documents.documentsWritten(by: id) where reached.insert(key).inserted { toVisit.append(key) }
        }
        if !changed.isEmpty { readersOfEverything.forEach(concern) }
        while let key = toVisit.popLast() {
            documents.writers(of: key).forEach(concern)
            readersOfDocument[key]?.forEach(concern)
            if collectionsVisited.insert(key.collectionName).inserted {
                readersOfCollection[key.collectionName]?.forEach(concern)
            }
        }
        return (concerned, reached)
    }

    private mutating func index(_ id: String, _ reads: CacheReads?) {
        guard let reads, !reads.everything else {
            readersOfEverything.insert(id)
            return
        }
        for key in reads.documents { readersOfDocument[key, default: []].insert(id) }
        for name in reads.collections { readersOfCollection[name, default: []].insert(id) }
    }

    private mutating func unindex(_ id: String, _ reads: CacheReads?) {
        guard let reads, !reads.everything else {
            readersOfEverything.remove(id)
            return
        }
        for key in reads.documents { Self.remove(id, at: key, from: &readersOfDocument) }
        for name in reads.collections { Self.remove(id, at: name, from: &readersOfCollection) }
    }

    private static func remove<Key: Hashable>(_ id: String, at key: Key, from index: inout [Key: Set<String>]) {
        guard var readers = index.removeValue(forKey: key) else { return }
        readers.remove(id)
        if !readers.isEmpty { index[key] = readers }
    }
}
