import Foundation

/// A task that did not finish in time.
struct TimedOut: Error, CustomStringConvertible {
    let seconds: Double
    var description: String { "timed out after \(seconds) s" }
}

/// The value of `task`, or ``TimedOut`` after `seconds`: a hang fails its test instead of stopping the suite. (A
/// deadline, not a synchronisation: the test still waits for the task itself.)
func value<T: Sendable>(of task: Task<T, any Error>, within seconds: Double = 10) async throws -> T {
    try await race(seconds) { await task.result }
}

/// The value of a task that cannot fail, or ``TimedOut`` after `seconds`.
func value<T: Sendable>(of task: Task<T, Never>, within seconds: Double = 10) async throws -> T {
    try await race(seconds) { .success(await task.value) }
}

private func race<T: Sendable>(_ seconds: Double, _ wait: @escaping @Sendable () async -> Result<T, any Error>) async throws -> T {
    let pending = Locked<CheckedContinuation<T, any Error>?>(nil)
    let finish: @Sendable (Result<T, any Error>) -> Void = { result in
        var continuation: CheckedContinuation<T, any Error>?
        pending.mutate { stored in
            continuation = stored
            stored = nil
        }
        continuation?.resume(with: result)
    }
    return try await withCheckedThrowingContinuation { continuation in
        pending.mutate { $0 = continuation }
        Task { finish(await wait()) }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { finish(.failure(TimedOut(seconds: seconds))) }
    }
}
