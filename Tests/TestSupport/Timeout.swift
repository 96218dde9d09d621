import Foundation

/// Something a test waited for did not happen in time.
public struct TimedOut: Error, CustomStringConvertible {
    public let what: String

    public init(what: String) {
        self.what = what
    }

    public var description: String { "timed out waiting for \(what)" }
}

/// Runs `body` and fails with ``TimedOut`` if it has not finished within `seconds`. On a timeout the body's task is
/// cancelled and not waited for, so a hang that ignores cancellation still fails its test instead of stalling the
/// suite. (A deadline, never a synchronisation: the test still waits for `body` itself.)
@discardableResult
public func withTimeout<T: Sendable>(
    _ seconds: Double, _ what: String, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let pending = Locked<CheckedContinuation<T, any Error>?>(nil)
    let finish: @Sendable (Result<T, any Error>) -> Void = { result in
        var continuation: CheckedContinuation<T, any Error>?
        pending.mutate { stored in
            continuation = stored
            stored = nil
        }
        continuation?.resume(with: result)
    }
    let work = Locked<Task<Void, Never>?>(nil)
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            pending.mutate { $0 = continuation }
            let task = Task {
                do { finish(.success(try await body())) } catch { finish(.failure(error)) }
            }
            work.mutate { $0 = task }
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
                task.cancel()
                finish(.failure(TimedOut(what: what)))
            }
        }
    } onCancel: {
        work.value?.cancel()
    }
}

/// The value of `task`, or ``TimedOut`` after `seconds`: a hang fails its test instead of stopping the suite.
public func value<T: Sendable>(of task: Task<T, any Error>, within seconds: Double = 10) async throws -> T {
    try await withTimeout(seconds, "a task (\(seconds) s)") { try await task.value }
}

/// The value of a task that cannot fail, or ``TimedOut`` after `seconds`.
public func value<T: Sendable>(of task: Task<T, Never>, within seconds: Double = 10) async throws -> T {
    try await withTimeout(seconds, "a task (\(seconds) s)") { await task.value }
}
