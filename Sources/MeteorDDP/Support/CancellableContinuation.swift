import NIOConcurrencyHelpers

/// Awaits a callback-style operation so that a cancelled task returns at once with `CancellationError`. The operation
/// itself goes on (a method call, for instance, still completes as Meteor's would); its later outcome is dropped.
///
/// `start` gets the callback to call with the outcome, exactly once (more calls are ignored); it may throw instead.
func withCancellableContinuation<T: Sendable>(
    _ start: (@escaping @Sendable (Result<T, any Error>) -> Void) throws -> Void
) async throws -> T {
    try await withCancellableContinuation { resume in
        try start(resume)
        return nil
    }
}

/// Awaits a callback-style operation that can be let go of: `start` returns the action that unregisters what it
/// registered (or `nil`). A cancelled task returns at once with `CancellationError` and runs that action, exactly
/// once, whether the cancellation comes before `start` returned or after; an operation that completed first drops it.
func withCancellableContinuation<T: Sendable>(
    _ start: (@escaping @Sendable (Result<T, any Error>) -> Void) throws -> (@Sendable () -> Void)?
) async throws -> T {
    let once = ResumeOnce<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            once.install(continuation)
            do {
                if let cancel = try start({ once.resume(with: $0) }) { once.installCancelAction(cancel) }
            } catch {
                once.resume(with: .failure(error))
            }
        }
    } onCancel: {
        once.cancel()
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

    private enum Cancellation {
        /// Neither an action nor a cancellation yet.
        case none
        case action(@Sendable () -> Void)
        case cancelled
        /// The action ran, or the operation completed first (the action is not needed any more).
        case done
    }

    private let state = NIOLockedValueBox(State.waiting)
    private let cancellation = NIOLockedValueBox(Cancellation.none)

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
        // Completed: what `start` registered is gone, its cancel action is not needed.
        cancellation.withLockedValue { if case .action = $0 { $0 = .done } }
    }

    /// `start` returned its cancel action: it runs now if the task was cancelled meanwhile.
    func installCancelAction(_ action: @escaping @Sendable () -> Void) {
        let runNow: Bool = cancellation.withLockedValue { cancellation in
            switch cancellation {
            case .none:
                cancellation = isSettled ? .done : .action(action)
                return false
            case .cancelled:
                cancellation = .done
                return true
            case .action, .done:
                return false
            }
        }
        if runNow { action() }
    }

    func cancel() {
        let action: (@Sendable () -> Void)? = cancellation.withLockedValue { cancellation in
            switch cancellation {
            case .none:
                cancellation = .cancelled
                return nil
            case .action(let action):
                cancellation = .done
                return action
            case .cancelled, .done:
                return nil
            }
        }
        resume(with: .failure(CancellationError()))
        action?()
    }

    private var isSettled: Bool {
        state.withLockedValue { state in
            if case .waiting = state { return false }
            if case .installed = state { return false }
            return true
        }
    }
}
