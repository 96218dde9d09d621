/// "Wait until saved": ``DDPClient/waitForPendingWrites()``.
extension DDPClient {
    /// Returns once every call made before it has completed (its `result` came and its writes are in the cache) and,
    /// with the offline store, once what they changed is on disk. Calls made after it do not hold it up, and it holds
    /// none up. Calls that fail (a server error, ``MethodError/Kind/timedOut``) count as completed: the server has
    /// answered or the client gave up; calls restored from the offline store count too.
    ///
    /// Firestore's `waitForPendingWrites`: an app marks its state "saved" with it, or waits before it moves to the
    /// background. While the client is offline it waits for the connection (give it a deadline with a task of your
    /// own and cancel it).
    ///
    /// - Throws: ``DDPError`` with code ``DDPError/Code/clientClosed`` when the client is closed first;
    ///   `CancellationError` at once when the task is cancelled (the wait is let go of).
    public func waitForPendingWrites() async throws {
        let token = pendingWritesTokens.wrappingIncrementThenLoad(ordering: .relaxed)
        let start: (@escaping @Sendable (Result<Void, any Error>) -> Void) -> (@Sendable () -> Void)? = { resume in
            // Asynchronously: this may be called from a stub or a callback on the client queue, or from a task whose
            // thread holds the database's write lock.
            self.queue.async {
                self.pendingWritesWaiters[token] = resume
                self.handle(.pendingWritesWaitRequested(token: token))
            }
            return {
                self.queue.async {
                    self.pendingWritesWaiters.removeValue(forKey: token)
                    self.handle(.pendingWritesWaitCancelled(token: token))
                }
            }
        }
        try await withCancellableContinuation(start)
    }

    /// Performs ``ClientCore/Action/pendingWritesSettled(token:closed:)``: the waiter returns, with the offline store
    /// once the cache's pending updates and the store's writes behind them are done.
    func pendingWritesSettled(_ token: Int, closed: Bool) {
        guard let resume = pendingWritesWaiters.removeValue(forKey: token) else { return }
        if closed { return resume(.failure(DDPError.clientClosed())) }
        // Behind the action list being performed: the completions of the calls it waited for have been handed on.
        guard let persistence else { return queue.async { resume(.success(())) } }
        store.performAfterFlush { persistence.writer.whenWritten { resume(.success(())) } }
    }
}
