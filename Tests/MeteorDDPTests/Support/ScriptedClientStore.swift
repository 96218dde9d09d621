import Dispatch
import EJSON
import Foundation
import NIOConcurrencyHelpers

@testable import MeteorDDP

/// A ``ClientStore`` in memory whose writes a test can hold (a gate) or make fail (a full disk).
final class ScriptedClientStore: ClientStore, @unchecked Sendable {
    // @unchecked because `state` is protected by its lock and the gate is a semaphore.
    private let state = NIOLockedValueBox(StoredState())
    private let failure = NIOLockedValueBox<String?>(nil)
    private let writes = NIOLockedValueBox(0)
    /// When set, writes wait until it is opened.
    let gate: Gate?

    /// Holds writers until opened (for good).
    final class Gate: @unchecked Sendable {
        // @unchecked because `isOpen` and `waiting` are protected by `condition`.
        private let condition = NSCondition()
        private var isOpen = false
        /// Writers waiting at the gate. Protected by `condition`.
        private var waiting = 0

        func open() {
            condition.lock()
            isOpen = true
            condition.broadcast()
            condition.unlock()
        }

        func pass() {
            condition.lock()
            waiting += 1
            condition.broadcast()
            while !isOpen { condition.wait() }
            waiting -= 1
            condition.unlock()
        }

        /// Waits until a writer waits at the gate; `false` if none did within `timeout` seconds.
        func waitForAWriter(timeout: TimeInterval = 10) -> Bool {
            let deadline = Date(timeIntervalSinceNow: timeout)
            condition.lock()
            defer { condition.unlock() }
            while waiting == 0, !isOpen {
                guard condition.wait(until: deadline) else { break }
            }
            return waiting > 0
        }
    }

    init(_ initial: StoredState = StoredState(), gated: Bool = false) {
        state.withLockedValue { $0 = initial }
        gate = gated ? Gate() : nil
    }

    /// From now on every write throws (as a full disk does).
    func failWrites(_ reason: String) { failure.withLockedValue { $0 = reason } }

    var stored: StoredState { state.withLockedValue { $0 } }
    var writeCount: Int { writes.withLockedValue { $0 } }

    func load() throws -> StoredState { stored }

    func write(_ batch: StoreBatch) throws {
        gate?.pass()
        if let reason = failure.withLockedValue({ $0 }) {
            throw PersistenceError(.writeFailed, path: nil, reason: reason)
        }
        writes.withLockedValue { $0 += 1 }
        state.withLockedValue { state in
            for (key, document) in batch.documents {
                state.documents.removeAll { $0.key == key }
                if let document { state.documents.append(StoredDocument(key: key, document: document)) }
            }
            for (key, document) in batch.serverDocuments {
                state.serverDocuments.removeAll { $0.key == key }
                if let document { state.serverDocuments.append(document) }
            }
            state.methods += batch.methodsAdded
            for (id, result) in batch.methodResults {
                if let index = state.methods.firstIndex(where: { $0.id == id }) { state.methods[index].result = result }
            }
            state.methods.removeAll { batch.methodsRemoved.contains($0.id) }
            if let subscriptions = batch.subscriptions { state.subscriptions = subscriptions }
        }
    }

    func clear(keepingDocuments: Bool, keepingCalls: Set<String>) throws {
        state.withLockedValue { state in
            let methods = state.methods.filter { keepingCalls.contains($0.id) }
            let kept = Set(methods.flatMap(\.stubWrote))
            state = StoredState(
                documents: keepingDocuments ? state.documents : state.documents.filter { kept.contains($0.key) },
                serverDocuments: state.serverDocuments.filter { kept.contains($0.key) },
                methods: methods
            )
        }
    }
}
