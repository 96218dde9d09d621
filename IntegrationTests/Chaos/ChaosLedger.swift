import EJSON
import Foundation
import MeteorDDP

/// What the chaos soak records, to judge afterwards: every state the server's documents went through, every state a
/// client stub produced, every change notification the client posted, every call's completions and every error.
/// Thread-safe (one lock).
final class ChaosLedger: @unchecked Sendable {
    // @unchecked because every stored property is protected by `lock`.
    private let lock = NSLock()
    /// Per document: its states on the server in order, index 0 being "absent" (before it was created).
    private var serverStates: [String: [String?]] = [:]
    /// Per document: the states client stubs left it in.
    private var stubStates: [String: Set<String>] = [:]
    /// Change notifications for the soak's collection, in delivery order.
    private var notifications: [(id: String, before: String?, after: String?, fields: EJSONObject?)] = []
    /// Per call: its method name and the outcomes of its completions (more than one is a defect).
    private var calls: [(name: String, outcomes: [String])] = []
    /// With ``PendingStubMode/rebase``: per document, its server states' fields (as `serverStates`), the states the
    /// insert stubs made, and the `items.bump` calls on it (`by`, and how many notifications were recorded when the
    /// call started and when it completed).
    private var serverFields: [String: [EJSONObject?]] = [:]
    private var insertedStates: [String: [EJSONObject]] = [:]
    private var bumps: [String: [(call: Int, by: EJSONValue, started: Int)]] = [:]
    private var completedAt: [Int: Int] = [:]
    /// Whether the client rebases its pending stubs (the notifications are judged against the server's states with
    /// the pending bumps replayed over them).
    let rebase: Bool

    init(rebase: Bool = false) {
        self.rebase = rebase
    }
    private var errors: [DDPError] = []
    private var pendingCalls = 0
    private var allCompleted: [@Sendable () -> Void] = []

    /// A document's fields in a form that compares equal whatever the field order.
    static func canonical(_ fields: EJSONObject?) -> String? {
        fields.map { EJSON.stringify(.object($0), canonical: true) }
    }

    // MARK: - Recording

    func serverChanged(_ id: String, to fields: EJSONObject?) {
        let state = Self.canonical(fields)
        lock.withLock {
            serverStates[id, default: [nil]].append(state)
            serverFields[id, default: [nil]].append(fields)
        }
    }

    /// An insert stub made `fields` (its replays too).
    func stubInserted(_ id: String, _ fields: EJSONObject?) {
        stubWrote(id, fields)
        guard let fields else { return }
        lock.withLock { insertedStates[id, default: []].append(fields) }
    }

    /// Call `call` is an `items.bump` of document `id`, setting `by`.
    func bumpStarted(_ call: Int, id: String, by: EJSONValue) {
        lock.withLock { bumps[id, default: []].append((call, by, notifications.count)) }
    }

    func stubWrote(_ id: String, _ fields: EJSONObject?) {
        guard let state = Self.canonical(fields) else { return }
        lock.withLock { _ = stubStates[id, default: []].insert(state) }
    }

    func notified(_ changes: DatabaseChanges, collection: String) {
        let entries = changes.documentChangeDetails.filter { $0.key.collectionName == collection }.map {
            (
                id: $0.key.documentID, before: Self.canonical($0.fieldsBefore), after: Self.canonical($0.fieldsAfter),
                fields: $0.fieldsAfter
            )
        }
        lock.withLock { notifications += entries }
    }

    /// Registers a call; returns its number, for ``completed(_:_:)``.
    func callStarted(_ name: String) -> Int {
        lock.withLock {
            calls.append((name, []))
            pendingCalls += 1
            return calls.count - 1
        }
    }

    func completed(_ call: Int, _ outcome: Result<EJSONValue?, any Error>) {
        let label: String
        switch outcome {
        case .success: label = "ok"
        case .failure(let error as MeteorError): label = "server error \(error.error)"
        case .failure(let error as MethodError): label = error.kind.rawValue
        case .failure(let error): label = "\(error)"
        }
        let waiters: [@Sendable () -> Void] = lock.withLock {
            calls[call].outcomes.append(label)
            if calls[call].outcomes.count == 1 {
                pendingCalls -= 1
                completedAt[call] = notifications.count
            }
            guard pendingCalls == 0 else { return [] }
            defer { allCompleted = [] }
            return allCompleted
        }
        for waiter in waiters { waiter() }
    }

    func reported(_ error: DDPError) {
        lock.withLock { errors.append(error) }
    }

    /// Returns once every call started so far has completed at least once, or when the task is cancelled.
    func waitUntilEveryCallCompleted() async {
        let waiter = Locked<CheckedContinuation<Void, Never>?>(nil)
        let resume: @Sendable () -> Void = {
            var continuation: CheckedContinuation<Void, Never>?
            waiter.mutate {
                continuation = $0
                $0 = nil
            }
            continuation?.resume()
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                waiter.mutate { $0 = continuation }
                let done: Bool = lock.withLock {
                    if pendingCalls == 0 { return true }
                    allCompleted.append(resume)
                    return false
                }
                if done || Task.isCancelled { resume() }
            }
        } onCancel: {
            resume()
        }
    }

    /// The calls that have not completed, for a report.
    var pendingDescription: String {
        lock.withLock {
            calls.enumerated().filter { $0.element.outcomes.isEmpty }.map { "#\($0.offset) \($0.element.name)" }.joined(
                separator: ", ")
        }
    }

    // MARK: - Judging

    struct Verdict {
        var calls = 0
        var outcomes: [String: Int] = [:]
        var completedTwice: [String] = []
        var notHanging = true
        var notifications = 0
        var wrongNotifications: [String] = []
        var unexpectedErrors: [String] = []
        var errorsByCode: [String: Int] = [:]
    }

    /// With ``PendingStubMode/rebase``: whether `after` (notification number `notification` of document `id`) is a
    /// server state of the document, no older than the one shown (index `from`), or a state an insert stub made,
    /// with some of the `items.bump` calls pending at that notification replayed over it (each adds 1 to `n` and
    /// sets `by`); returns the server state's index (`from` for an insert's state). A call counts as pending from a
    /// little before it was registered (its stub runs first) until a little after it completed. Locked by the
    /// caller.
    private func rebasedServerState(_ id: String, _ after: EJSONObject?, notification: Int, from: Int) -> Int? {
        let history = serverFields[id] ?? [nil]
        guard let after else { return history[from...].firstIndex { $0 == nil } }
        // Notifications are recorded on the observer queue and completions on the callback queue, each a moment
        // after the client did them: either may be recorded a little ahead of the other.
        let pending = (bumps[id] ?? []).filter {
            $0.started <= notification + 200 && (completedAt[$0.call].map { $0 + 200 > notification } ?? true)
        }
        // An insert stub's state first: it moves the shown server state on no more than a stub's state does in
        // Meteor's mode.
        var bases: [(index: Int, fields: EJSONObject)] = (insertedStates[id] ?? []).map { (from, $0) }
        for index in from..<history.count { if let fields = history[index] { bases.append((index, fields)) } }
        func number(_ fields: EJSONObject) -> Double { fields["n"]?.doubleValue ?? 0 }
        for base in bases {
            let replayed = number(after) - number(base.fields)
            guard replayed >= 0, replayed <= Double(pending.count) else { continue }
            var rest = after
            var baseRest = base.fields
            for name in ["n", "by"] {
                rest.removeValue(forKey: name)
                baseRest.removeValue(forKey: name)
            }
            guard rest == baseRest else { continue }
            let by = after["by"] ?? .null
            let bySetByABump = pending.contains { $0.by == by }
            if replayed == 0 ? by == (base.fields["by"] ?? .null) : bySetByABump { return base.index }
        }
        return nil
    }

    /// Judges what was recorded: each notification must show a state the server had, no older than the server
    /// state the document showed before, or a state a stub produced, and must really change the document.
    func verdict(collection: String) -> Verdict {
        lock.withLock {
            var verdict = Verdict()
            verdict.calls = calls.count
            verdict.notHanging = pendingCalls == 0
            for (index, call) in calls.enumerated() {
                for outcome in call.outcomes { verdict.outcomes["\(call.name): \(outcome)", default: 0] += 1 }
                if call.outcomes.count > 1 {
                    verdict.completedTwice.append("call \(index) (\(call.name)): \(call.outcomes)")
                }
            }
            verdict.notifications = notifications.count
            var shownServerState: [String: Int] = [:]
            for (number, entry) in notifications.enumerated() {
                let history = serverStates[entry.id] ?? [nil]
                let from = shownServerState[entry.id] ?? 0
                let describe = {
                    "#\(number) \(collection)/\(entry.id): \(entry.before ?? "absent") -> \(entry.after ?? "absent")"
                }
                if entry.before == entry.after {
                    verdict.wrongNotifications.append("not a change: " + describe())
                } else if rebase {
                    if let index = rebasedServerState(entry.id, entry.fields, notification: number, from: from) {
                        shownServerState[entry.id] = max(from, index)
                    } else {
                        verdict.wrongNotifications.append(
                            "not the server's state (not older than shown) with pending bumps over it: " + describe())
                    }
                } else if let after = entry.after, stubStates[entry.id]?.contains(after) == true {
                    continue
                } else if let index = history[from...].firstIndex(where: { $0 == entry.after }) {
                    shownServerState[entry.id] = index
                } else if history[..<from].contains(where: { $0 == entry.after }) {
                    verdict.wrongNotifications.append("back to an older server state: " + describe())
                } else if entry.after == nil {
                    verdict.wrongNotifications.append("a removal the server never made: " + describe())
                } else {
                    verdict.wrongNotifications.append("a state neither the server nor a stub had: " + describe())
                }
            }
            for error in errors {
                verdict.errorsByCode["\(error.code)", default: 0] += 1
                switch error.code {
                case .connectionLost, .connectTimedOut, .heartbeatTimedOut: break
                default: verdict.unexpectedErrors.append(error.message)
                }
            }
            return verdict
        }
    }
}
