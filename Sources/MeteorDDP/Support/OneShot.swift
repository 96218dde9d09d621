import NIOConcurrencyHelpers

/// A value that arrives once, awaited by any number of tasks (each may be cancelled alone).
final class OneShot<T: Sendable>: Sendable {
    private struct State {
        var outcome: Result<T, any Error>?
        var waiters: [UInt64: @Sendable (Result<T, any Error>) -> Void] = [:]
        var nextToken: UInt64 = 0
    }

    private let state = NIOLockedValueBox(State())

    /// Sets the outcome (the first one wins) and resumes every waiter.
    func fulfill(_ outcome: Result<T, any Error>) {
        let waiters: [@Sendable (Result<T, any Error>) -> Void] = state.withLockedValue { state in
            guard state.outcome == nil else { return [] }
            state.outcome = outcome
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter(outcome) }
    }

    var value: T {
        get async throws {
            try await withCancellableContinuation { resume in
                let token: UInt64? = state.withLockedValue { state in
                    if state.outcome != nil { return nil }
                    defer { state.nextToken += 1 }
                    state.waiters[state.nextToken] = resume
                    return state.nextToken
                }
                guard let token else {
                    resume(state.withLockedValue { $0.outcome! })
                    return nil
                }
                return { [state] in _ = state.withLockedValue { $0.waiters.removeValue(forKey: token) } }
            }
        }
    }
}
