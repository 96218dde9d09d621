/// "Wait until saved" (``DDPClient/waitForPendingWrites()``, Firestore's `waitForPendingWrites`) as events of the
/// core: a wait takes the calls pending when it starts (queued, in flight, restored from the offline store) and is
/// settled once each has completed; calls made after it do not hold it up.
extension ClientCore {
    /// Wait `token` starts: settled at once when no call is pending (or the client is closed).
    mutating func pendingWritesWaitActions(_ token: Int) -> [Action] {
        if isClosed { return [.pendingWritesSettled(token: token, closed: true)] }
        let pending = Set(session.methods.invocations.keys)
        guard !pending.isEmpty else { return [.pendingWritesSettled(token: token, closed: false)] }
        pendingWritesWaits[token] = pending
        return []
    }

    /// Call `id` completed: the waits it was the last of are settled, in token order.
    mutating func pendingWritesActions(completed id: String) -> [Action] {
        guard !pendingWritesWaits.isEmpty else { return [] }
        var settled: [Int] = []
        for token in pendingWritesWaits.keys {
            guard pendingWritesWaits[token]!.remove(id) != nil, pendingWritesWaits[token]!.isEmpty else { continue }
            settled.append(token)
        }
        for token in settled { pendingWritesWaits.removeValue(forKey: token) }
        return settled.sorted().map { .pendingWritesSettled(token: $0, closed: false) }
    }
}
