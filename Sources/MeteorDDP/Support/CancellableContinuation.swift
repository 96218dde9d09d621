import NIOConcurrencyHelpers

/// Awaits a callback-style operation so that a cancelled task returns at once with `CancellationError`. The operation
/// itself goes on (a method call, for instance, still completes as Meteor's would); its later outcome is dropped.
///
/// `start` gets the callback to call with the outcome, exactly once (more calls are ignored); it may throw instead.
/// `onCancel` runs when the task is cancelled, to let go of what `start` registered (it may run before `start`).
func withCancellableContinuation<T: Sendable>(
    onCancel: @escaping @Sendable () -> Void = {},
    _ start: (@escaping @Sendable (Result<T, any Error>) -> Void) throws -> Void
) async throws -> T {
    let once = ResumeOnce<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            once.install(continuation)
            do {
                try start { once.resume(with: $0) }
            } catch {
                once.resume(with: .failure(error))
            }
        }
    } onCancel: {
        once.resume(with: .failure(CancellationError()))
        onCancel()
    }
}

/// A continuation resumed by the first of several racing outcomes (the operation's, or the cancellation's, which may
/// come before the continuation exists).
private final class ResumeOnce<T: Sendable>: Sendable {
    private enum State {
        case waiting
        case installed(CheckedContinuation<T, any Error>)
        case outcome(Result<T, any Error>)
        case resumed
    }

    private let state = NIOLockedValueBox(State.waiting)

    func install(_ continuation: CheckedContinuation<T, any Error>) {
        let early: Result<T, any Error>? = state.withLockedValue { state in
            guard case .outcome(let result) = state else {
                state = .installed(continuation)
                return nil
            }
            state = .resumed
            return result
        }
        if let early { continuation.resume(with: early) }
    }

    func resume(with result: Result<T, any Error>) {
        let continuation: CheckedContinuation<T, any Error>? = state.withLockedValue { state in
            switch state {
            case .waiting:
                state = .outcome(result)
                return nil
            case .installed(let continuation):
                state = .resumed
                return continuation
            case .outcome, .resumed:
                return nil
            }
        }
        continuation?.resume(with: result)
    }
}
