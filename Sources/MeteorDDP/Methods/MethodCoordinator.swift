import DequeModule
import EJSON

/// Outstanding method calls in Meteor's blocks (LC `_outstandingMethodBlocks`, `_methodInvokers`, MethodInvoker.js):
/// a `wait` call gets a block of its own, others join the last non-wait block, only the first block is on the wire,
/// and a call completes when it has both its result and its data visible.
///
/// No I/O: the client queue owns it (one, in the session's state) and sends the messages it returns. Its pending
/// calls are shared records (``Invocation``), so a copy of a coordinator is not independent of the original.
struct MethodCoordinator {
    typealias Completion = @Sendable (Result<EJSONValue?, any Error>) -> Void

    /// One call (Meteor's MethodInvoker). A reference, confined to the client queue like the coordinator: the
    /// pending calls' table, the outcomes and the calls waiting for the disk share one record, so recording a result
    /// or handing a call over copies (and retains) none of its fields.
    final class Invocation {
        let id: String
        let name: String
        let message: ClientMessage
        let options: MethodOptions
        let completion: Completion
        /// Whether `completion` only resumes a task (the async API), so it may run on the client queue.
        var completesInline = false
        /// The task awaiting the call, if one does: it drains the frames that complete it (``CallWaiter``).
        var waiter: CallWaiter?
        /// The result, once received.
        var result: Result<EJSONValue?, any Error>?
        /// Whether `updated` arrived (its data may not be flushed yet).
        var updatedReceived = false
        /// The call's deadline, from its options or the configuration, once the core took the call (`nil`: none).
        var timeout: Duration?
        /// Whether `updated` arrived and the data was flushed.
        var dataVisible = false

        init(id: String, name: String, message: ClientMessage, options: MethodOptions, completion: @escaping Completion)
        {
            self.id = id
            self.name = name
            self.message = message
            self.options = options
            self.completion = completion
        }
    }

    struct Block {
        var wait: Bool
        /// In call order. Results mostly arrive in that order, so the one answered is usually the first, which a
        /// deque removes without shifting the others, however many calls one block holds.
        var methodIDs: Deque<String>
    }

    // MARK: - Mutable State (confined to the client queue)

    /// Calls not yet completed, by id. Confined to the client queue.
    private(set) var invocations: [String: Invocation] = [:]
    /// Calls still waiting for their result, in Meteor's blocks. Confined to the client queue.
    private(set) var blocks: [Block] = []
    /// The pending calls whose frame went out on the current socket (or was "sent" while it was down): Meteor's
    /// `sentMessage`, kept as a set so that "which calls are sent" costs the sent calls, not every pending one (a
    /// backlog of thousands of calls queued behind a wait call must not slow down each `updated`). Confined to the
    /// client queue.
    private(set) var sentIDs: Set<String> = []
    /// Changes whenever a call joins ``sentIDs``: flush waiters registered in the same generation (with no stub write
    /// between) wait for the same documents
    /// (``ServerDocumentBuffer/runWhenAllFlushed(sentMethods:sentGeneration:)``). Confined to the client queue.
    private(set) var sentGeneration = 0
    /// The next method id (decimal, from "1", per connection object). Confined to the client queue.
    private var nextID = 1
    /// After a socket reset, until the reconnect hooks ran: the blocks to put back behind the calls the hooks make.
    /// Confined to the client queue.
    private var blocksAwaitingReconnectHooks: [Block] = []

    mutating func makeMethodID() -> String {
        defer { nextID += 1 }
        return String(nextID)
    }

    /// The id ``makeMethodID()`` would make next.
    var nextMethodID: String { String(nextID) }

    /// A call took `id`, read from ``nextMethodID`` (nothing took an id in between: the client queue made no other
    /// call meanwhile).
    mutating func takeMethodID(_ id: String) {
        assert(id == String(nextID), "call id \(id) taken while \(nextID) was next")
        nextID = max(nextID, (Int(id) ?? nextID) + 1)
    }

    // MARK: - Calling

    /// Queues a call; returns the invocations to send now (empty unless it landed in the first block).
    mutating func enqueue(_ invocation: Invocation) -> [Invocation] {
        invocations[invocation.id] = invocation
        joinBlocks(invocation)
        return blocks.count == 1 ? markSent([invocation.id]) : []
    }

    /// A wait call gets a block of its own; another joins the last block unless that is a wait block.
    private mutating func joinBlocks(_ invocation: Invocation) {
        if invocation.options.wait || blocks.last?.wait != false {
            blocks.append(Block(wait: invocation.options.wait, methodIDs: [invocation.id]))
        } else {
            blocks[blocks.count - 1].methodIDs.append(invocation.id)
        }
    }

    /// Puts back a call a store kept (at launch, in call order): one with its result waits only for its data (it
    /// is not sent again, as after a reconnect); the others queue as if just called, not sent. Later ids follow the
    /// restored ones.
    mutating func restore(_ invocation: Invocation) {
        guard invocations[invocation.id] == nil else { return }
        invocations[invocation.id] = invocation
        if invocation.result == nil { joinBlocks(invocation) }
        if let number = Int(invocation.id), number >= nextID, number < Int.max { nextID = number + 1 }
    }

    /// Whether the call went out on the current socket (or was "sent" while it was down).
    func isSent(_ id: String) -> Bool {
        sentIDs.contains(id)
    }

    /// The calls sent and not answered yet (no `result`), in call order.
    func sentWithoutResult() -> [String] {
        sentIDs.filter { invocations[$0]?.result == nil }.sorted { (Int($0) ?? 0, $0) < (Int($1) ?? 0, $1) }
    }

    /// Whether call `id` is pending with no `result` yet.
    func isAwaitingResult(_ id: String) -> Bool {
        invocations[id].map { $0.result == nil } ?? false
    }

    /// The name of call `id`, if it is pending.
    func name(of id: String) -> String? {
        invocations[id]?.name
    }

    private mutating func markSent(_ ids: some Sequence<String>) -> [Invocation] {
        sentGeneration &+= 1
        return ids.compactMap { id in
            guard let slot = invocations.index(forKey: id) else { return nil }
            sentIDs.insert(id)
            return invocations.values[slot]
        }
    }

    // MARK: - Server messages

    enum ResultOutcome {
        /// No such call in the first block (logged by the caller).
        case unknown
        /// Recorded; the call completes once its data is visible.
        case recorded(Invocation)
        /// Recorded and complete: run the completion, and send `next` (the following block) if non-empty.
        case completed(Invocation, next: [Invocation])
    }

    /// `result` (LC `_livedata_result`): only calls in the first block may have one.
    mutating func receivedResult(id: String, _ result: Result<EJSONValue?, any Error>) -> ResultOutcome {
        guard let index = blocks.first?.methodIDs.firstIndex(of: id), let slot = invocations.index(forKey: id) else {
            return .unknown
        }
        blocks[0].methodIDs.remove(at: index)
        invocations.values[slot].result = result
        return complete(at: slot)
    }

    /// Call `id`'s deadline passed with no `result`: it fails with `failure` as if that had come. One not on the wire
    /// (in a later block, or set aside for the reconnect hooks) leaves its block and is never sent. `.unknown` when no
    /// pending call without a result has the id.
    mutating func resultTimedOut(id: String, _ failure: any Error) -> (outcome: ResultOutcome, wasOnTheWire: Bool) {
        guard let slot = invocations.index(forKey: id), invocations.values[slot].result == nil else {
            return (.unknown, false)
        }
        if blocks.first?.methodIDs.contains(id) == true {
            return (receivedResult(id: id, .failure(failure)), sentIDs.contains(id))
        }
        if !Self.remove(id, from: &blocks) { _ = Self.remove(id, from: &blocksAwaitingReconnectHooks) }
        invocations.values[slot].result = .failure(failure)
        return (complete(at: slot), false)
    }

    /// Takes call `id` out of its block (the block goes when it is left empty); returns whether it was in one.
    private static func remove(_ id: String, from blocks: inout [Block]) -> Bool {
        for index in blocks.indices {
            guard let position = blocks[index].methodIDs.firstIndex(of: id) else { continue }
            blocks[index].methodIDs.remove(at: position)
            if blocks[index].methodIDs.isEmpty { blocks.remove(at: index) }
            return true
        }
        return false
    }

    /// The call's data is visible (after its `updated` and the flush). Returns the completion outcome.
    mutating func dataBecameVisible(id: String) -> ResultOutcome {
        guard let slot = invocations.index(forKey: id) else { return .unknown }
        invocations.values[slot].dataVisible = true
        return complete(at: slot)
    }

    /// Completes the call at `slot` if it has both its result and its data, else returns it as recorded. (Through
    /// the slot its lookup found: a completion hashes the id once.)
    private mutating func complete(at slot: Dictionary<String, Invocation>.Index) -> ResultOutcome {
        let invocation = invocations.values[slot]
        guard invocation.result != nil, invocation.dataVisible else { return .recorded(invocation) }
        invocations.remove(at: slot)
        sentIDs.remove(invocation.id)
        return .completed(invocation, next: outstandingMethodFinished())
    }

    /// LC `_outstandingMethodFinished`: when no sent call is outstanding, the (empty) first block goes and the next
    /// block is sent.
    private mutating func outstandingMethodFinished() -> [Invocation] {
        guard sentIDs.isEmpty, let first = blocks.first else { return [] }
        guard first.methodIDs.isEmpty else { return [] }
        blocks.removeFirst()
        guard let next = blocks.first else { return [] }
        return markSent(next.methodIDs)
    }

    // MARK: - Reconnecting (LC onReset, steps 2–5)

    /// A new socket: fails sent `noRetry` calls of the first block (their result is set; they complete when their
    /// data is visible, at reconnect quiescence) and marks everything unsent; calls still waiting for their result
    /// wait for their data again (the `updated` of their next run). The blocks are set aside until
    /// ``reconnectHooksRan()``, so that the calls the hooks make go first. Returns the failed calls and the calls
    /// that go again.
    mutating func socketReset() -> (failed: [Invocation], sentAgain: Set<String>) {
        // Blocks still set aside (a reset before the previous one's hooks ran) go behind the calls made since.
        _ = reconnectHooksRan()
        var failed: [Invocation] = []
        if var first = blocks.first {
            first.methodIDs.removeAll { id in
                guard let invocation = invocations[id], sentIDs.contains(id), invocation.options.noRetry else {
                    return false
                }
                invocation.result = .failure(MethodError.invocationFailed(invocation.name))
                failed.append(invocation)
                return true
            }
            blocks[0] = first
            if first.methodIDs.isEmpty { blocks.removeFirst() }
        }
        sentIDs.removeAll()
        var sentAgain: Set<String> = []
        for invocation in invocations.values where invocation.result == nil {
            // A call without its result is sent again: the new session's run brings its own `updated`, and the data
            // the old run made visible is replaced by the new session's anyway.
            invocation.updatedReceived = false
            invocation.dataVisible = false
            sentAgain.insert(invocation.id)
        }
        blocksAwaitingReconnectHooks = blocks
        blocks = []
        return (failed, sentAgain)
    }

    /// The reconnect hooks ran (LC `_callOnReconnectAndSendAppropriateOutstandingMethods`): puts the blocks set aside
    /// back behind the calls the hooks made, merging the last new block with the first old one when neither is a
    /// wait block. Returns the calls to send now (the new first block).
    mutating func reconnectHooksRan() -> [Invocation] {
        var saved = blocksAwaitingReconnectHooks
        blocksAwaitingReconnectHooks = []
        guard !saved.isEmpty else { return [] }
        if blocks.isEmpty {
            blocks = saved
            return markSent(blocks[0].methodIDs)
        }
        var toSend: [Invocation] = []
        if let last = blocks.last, !last.wait, !saved[0].wait {
            let merged = saved.removeFirst()
            blocks[blocks.count - 1].methodIDs += merged.methodIDs
            if blocks.count == 1 { toSend = markSent(merged.methodIDs) }
        }
        blocks += saved
        return toSend
    }

    /// `connected` after a reconnect: calls that have their result but not their data complete at quiescence;
    /// calls already sent on this socket block quiescence (with `onlyWaitCallsBlock`, only `wait` ones: see
    /// ``PendingStubMode/rebase``).
    func reconnectQuiescence(onlyWaitCallsBlock: Bool = false) -> (completeAtQuiescence: [String], blocking: [String]) {
        var complete: [String] = []
        var blocking: [String] = []
        for (id, invocation) in invocations {
            if invocation.result != nil {
                complete.append(id)
            } else if sentIDs.contains(id), !onlyWaitCallsBlock || invocation.options.wait {
                blocking.append(id)
            }
        }
        return (complete.sorted(by: Self.idOrder), blocking.sorted(by: Self.idOrder))
    }

    /// Removes every call (the client was closed) and returns them to be failed.
    mutating func removeAll() -> [Invocation] {
        defer {
            invocations.removeAll()
            sentIDs.removeAll()
            blocks.removeAll()
            blocksAwaitingReconnectHooks.removeAll()
        }
        return invocations.values.sorted { Self.idOrder($0.id, $1.id) }
    }

    static func idOrder(_ a: String, _ b: String) -> Bool {
        (Int(a) ?? 0, a) < (Int(b) ?? 0, b)
    }
}
