import Dispatch
import EJSON

/// The client's subscriptions: shared records keyed by name and parameters, reference-counted by handles,
/// unsubscribed after `notInUseTimeout`, re-sent on every reconnect (LC `subscribe`, `_process_ready`,
/// `_livedata_nosub`, `onReset`; meteor-ios' METSubscriptionManager).
///
/// No effects: the records it hands back are stopped or settled by the client. Confined to the client queue.
struct SubscriptionManager {
    /// What makes two subscriptions the same one: the publication's name and EJSON-equal params.
    struct Identity: Hashable {
        let name: String
        let params: [EJSONValue]
    }

    /// One server subscription.
    struct Record {
        let id: String
        let name: String
        let params: [EJSONValue]
        let shared: SubscriptionState
        let notInUseTimeout: Duration
        /// Handles currently using it.
        var useCount: Int
        /// Whether the server said `ready` (and it took effect).
        var isReady = false
        /// Whether `sub` went out on the current socket.
        var sentOnCurrentSocket = false
        /// While unused: when the `unsub` timer was armed (its generation, to ignore late firings).
        var unsubscribeGeneration: Int?
    }

    // MARK: - Mutable State (confined to the client queue)

    /// Records in subscription order. Confined to the client queue.
    private(set) var records: [String: Record] = [:]
    /// Subscription ids in the order they were made (re-sent in this order). Confined to the client queue.
    private(set) var order: [String] = []
    /// Generation counter for unsubscribe timers. Confined to the client queue.
    private var timerGeneration = 0
    /// Subscriptions that were ready before a reconnect and are not ready again yet. Confined to the client queue.
    private(set) var beingRevived: Set<String> = []

    // MARK: - Subscribing

    /// Finds an in-use or lingering record with the same name and EJSON-equal params, or makes a new one.
    /// Returns the record and whether it is new (a new one must be sent). A new record takes `state` as its shared
    /// state when given (a handle made inside a transaction already has one).
    mutating func acquire(
        name: String, params: [EJSONValue], notInUseTimeout: Duration, userCode: UserCodeQueue,
        state: SubscriptionState? = nil, makeID: () -> String
    ) -> (Record, isNew: Bool) {
        if let id = order.first(where: { records[$0]?.name == name && records[$0]?.params == params }),
            var record = records[id]
        {
            record.useCount += 1
            record.unsubscribeGeneration = nil
            records[id] = record
            return (record, false)
        }
        let id = makeID()
        if awaitingRestored.remove(Identity(name: name, params: params)) != nil {
            // Made again while the first connection after a restart waits for it.
            beingRevived.insert(id)
        }
        let record = Record(
            id: id, name: name, params: params, shared: state ?? SubscriptionState(name: name, userCode: userCode),
            notInUseTimeout: notInUseTimeout, useCount: 1)
        records[id] = record
        order.append(id)
        membershipVersion += 1
        return (record, true)
    }

    mutating func markSent(_ id: String) {
        records[id]?.sentOnCurrentSocket = true
    }

    /// A handle let go. Returns the delay after which to unsubscribe and the timer generation, if it became unused.
    mutating func release(_ id: String) -> (delay: Duration, generation: Int)? {
        guard var record = records[id], record.useCount > 0 else { return nil }
        record.useCount -= 1
        if record.useCount == 0 {
            timerGeneration += 1
            record.unsubscribeGeneration = timerGeneration
            records[id] = record
            return (record.notInUseTimeout, timerGeneration)
        }
        records[id] = record
        return nil
    }

    /// The unsubscribe timer fired: removes the record if it is still unused. Returns it to send `unsub` (and stop).
    mutating func unsubscribeTimerFired(_ id: String, generation: Int) -> Record? {
        guard let record = records[id], record.useCount == 0, record.unsubscribeGeneration == generation else {
            return nil
        }
        remove(id)
        return record
    }

    // MARK: - Server messages

    /// Whether a subscription is not ready yet (new, or being revived after a reconnect).
    var hasPendingSubscriptions: Bool {
        !beingRevived.isEmpty || records.values.contains { !$0.isReady }
    }

    /// `ready`: the records among `ids` and the ids no record has (to be reported).
    mutating func ready(_ ids: [String]) -> (ready: [Record], unknown: [String]) {
        var known: [Record] = []
        var unknown: [String] = []
        for id in ids {
            guard var record = records[id] else {
                unknown.append(id)
                continue
            }
            beingRevived.remove(id)
            record.isReady = true
            records[id] = record
            known.append(record)
        }
        return (known, unknown)
    }

    /// `nosub`: removes the record and returns it (`nil` for an unknown id, for example one already stopped locally).
    mutating func nosub(_ id: String) -> Record? {
        beingRevived.remove(id)
        guard let record = records[id] else { return nil }
        remove(id)
        return record
    }

    // MARK: - Reconnecting

    /// A new socket: unused records are dropped (their lingering ends) and returned, to be stopped; the rest count
    /// as not sent on it.
    mutating func socketReset() -> [Record] {
        var dropped: [Record] = []
        for id in order {
            records[id]?.sentOnCurrentSocket = false
            if let record = records[id], record.useCount == 0 {
                remove(id)
                dropped.append(record)
            }
        }
        return dropped
    }

    /// The records whose `sub` has not gone out on the current socket, in subscription order (after the reconnect
    /// hooks ran: a subscription a hook made went out already).
    func recordsNotSent() -> [Record] {
        order.compactMap { records[$0] }.filter { !$0.sentOnCurrentSocket }
    }

    /// `connected` after a reconnect: the subscriptions that were ready must be ready again before data shows.
    mutating func startRevival() -> Set<String> {
        beingRevived = Set(records.values.filter(\.isReady).map(\.id))
        return beingRevived
    }

    /// `ready` or `nosub` arrived (and is held until quiescence): these subscriptions no longer block it.
    mutating func stopReviving(_ ids: [String]) {
        beingRevived.subtract(ids)
    }

    /// The quiescence hold reached its limit: no subscription blocks it any more. Returns those that did.
    mutating func stopRevivingAll() -> Set<String> {
        defer {
            beingRevived = []
            awaitingRestored = []
        }
        return beingRevived
    }

    var isReviving: Bool { !beingRevived.isEmpty || !awaitingRestored.isEmpty }

    /// Subscriptions that were active when the app last stopped and that the app has not made again yet: the first
    /// connection after a restart waits for them (until ``stopAwaitingRestored()``). Confined to the client queue.
    private(set) var awaitingRestored: Set<Identity> = []

    /// The first connection after a restart: every subscription made so far is revived, and those of `restored` not
    /// made yet are awaited.
    mutating func startRestoredRevival(_ restored: Set<Identity>) {
        beingRevived = Set(records.keys)
        awaitingRestored = restored.subtracting(records.values.map { Identity(name: $0.name, params: $0.params) })
    }

    /// The delay for making restored subscriptions again is over.
    mutating func stopAwaitingRestored() {
        awaitingRestored = []
    }

    /// Changes whenever a record is added or removed (what ``active`` lists). Confined to the client queue.
    private(set) var membershipVersion = 0

    /// The subscriptions on the server, in subscription order (what a store keeps): those no handle uses any more
    /// count until they are unsubscribed, so an app tearing its handles down as it quits does not forget them.
    var active: [Identity] {
        order.compactMap { records[$0] }.map { Identity(name: $0.name, params: $0.params) }
    }

    /// Removes every record (the client was closed) and returns them, to be stopped.
    mutating func removeAll() -> [Record] {
        defer {
            records.removeAll()
            order.removeAll()
            beingRevived.removeAll()
            membershipVersion += 1
        }
        return order.compactMap { records[$0] }
    }

    private mutating func remove(_ id: String) {
        membershipVersion += 1
        records.removeValue(forKey: id)
        order.removeAll { $0 == id }
        beingRevived.remove(id)
    }
}
