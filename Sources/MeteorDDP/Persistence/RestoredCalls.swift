import EJSON
import NIOConcurrencyHelpers

/// A call restored from the offline store: made in an earlier run and unanswered when it stopped.
public struct RestoredCall: Sendable, Equatable {
    /// The call's id, the same on the wire as in the earlier run.
    public let id: String
    public let name: String
    public let params: [EJSONValue]
    /// The seed its stub used (the same on the wire, so ids the stub made equal the server's).
    public let randomSeed: String?
}

/// How a restored call ended.
public struct RestoredCallOutcome: Sendable {
    public enum Result: Sendable {
        /// The server ran it (again, if it had run before the restart: see ``alreadyApplied(_:)``).
        case succeeded(EJSONValue?)
        /// It failed; its stub's effect was rolled back to the server's version. The error is the server's
        /// ``MeteorError``, or a ``MethodError`` (a `noRetry` call that may have run before the restart, an answer that
        /// did not parse).
        case failed(any Error)
        /// The server rejected it, but the documents its stub wrote are on the server as the stub wrote them (every
        /// field the stub set, same values; removed ones absent): the call most likely ran before the restart and
        /// failed now because it ran twice (an insert with the same id: a duplicate key). The server's view stays.
        case alreadyApplied(MeteorError)
    }

    /// How the outcome was decided.
    public enum Source: Sendable, Equatable {
        /// From the server's answer saved before the restart: the call was not sent again.
        case savedAnswer
        /// The call was sent again and this is the server's answer (it may have run twice: DDP delivers a re-sent
        /// call at least once).
        case sentAgain
        /// Not sent again: a `noRetry` call that may have run before the restart fails without being sent.
        case notSent
    }

    public let call: RestoredCall
    public let result: Result
    /// Whether a saved answer or a new one decided it.
    public let source: Source
}

/// The calls a client restored from its store, and their outcomes as they come.
///
/// Their original completion handlers died with the earlier run; this is where their results go. Iterate it from
/// launch (each iteration replays the outcomes so far, then waits for the others, and ends once every restored call
/// has one, or once the client is closed). A call cut short by ``DDPClient/close()`` has no outcome in this run: it
/// stays in the store and is sent again at the next launch.
///
/// For example:
/// ```swift
/// for await outcome in client.restoredCalls {
///     if case .failed(let error) = outcome.result { showProblem(outcome.call.name, error) }
/// }
/// ```
public final class RestoredCalls: AsyncSequence, Sendable {
    public typealias Element = RestoredCallOutcome

    private struct State {
        var outcomes: [RestoredCallOutcome] = []
        var continuations: [Int: AsyncStream<RestoredCallOutcome>.Continuation] = [:]
        var nextID = 0
        /// Per restored call: whether the server already has what its stub wrote (noted at its `updated`).
        var alreadyOnServer: [String: Bool] = [:]
        /// The client was closed: no outcome comes any more, and iterations end once they replayed those so far.
        var clientClosed = false
        /// Calls whose judgement waits for the server's data of their documents (a subscription still on its way).
        var awaitingServerData: Set<String> = []
        /// Refusals of such calls, reported once they are judged.
        var deferred:
            [String: (
                call: RestoredCall, result: Swift.Result<EJSONValue?, any Error>, source: RestoredCallOutcome.Source
            )] = [:]
    }

    /// The restored calls, in call order.
    public let calls: [RestoredCall]
    private let state = NIOLockedValueBox(State())
    /// Serialises registering, yielding and finishing, so iterations see outcomes in order; values are handed to the
    /// streams under it, never under `state`'s lock, which a stream's termination handler takes (under its cancelled
    /// task's status lock, which handing a value to that task's stream takes too: see ``Broadcaster``).
    private let order = NIOLock()

    init(calls: [RestoredCall]) {
        self.calls = calls
    }

    /// Whether every restored call has its outcome.
    public var isComplete: Bool { state.withLockedValue { $0.outcomes.count >= calls.count } }

    /// The outcomes so far.
    public var outcomes: [RestoredCallOutcome] { state.withLockedValue { $0.outcomes } }

    public func makeAsyncIterator() -> AsyncStream<RestoredCallOutcome>.Iterator {
        let (stream, continuation) = AsyncStream.makeStream(of: RestoredCallOutcome.self, bufferingPolicy: .unbounded)
        // Unbounded, yet bounded by the number of restored calls (one outcome each).
        let id: Int? = order.withLock {
            let (id, outcomes): (Int?, [RestoredCallOutcome]) = state.withLockedValue { state in
                guard state.outcomes.count < calls.count, !state.clientClosed else { return (nil, state.outcomes) }
                state.nextID += 1
                state.continuations[state.nextID] = continuation
                return (state.nextID, state.outcomes)
            }
            for outcome in outcomes { continuation.yield(outcome) }
            return id
        }
        if let id {
            continuation.onTermination = { [weak self] _ in
                _ = self?.state.withLockedValue { $0.continuations.removeValue(forKey: id) }
            }
        } else {
            continuation.finish()
        }
        return stream.makeAsyncIterator()
    }

    /// Notes whether the server has what the stub of call `id` wrote (see
    /// ``RestoredCallOutcome/Result/alreadyApplied(_:)``).
    func noteServerVersions(of id: String, matchStub: Bool) {
        state.withLockedValue { $0.alreadyOnServer[id] = matchStub }
    }

    /// Call `id` is judged only once the server's data for its documents is in: a refusal waits until
    /// ``judged(_:matchStub:)``.
    func awaitServerData(for id: String) {
        state.withLockedValue { _ = $0.awaitingServerData.insert(id) }
    }

    /// The judgement of a call that waited for the server's data; its refusal, if it came meanwhile, is reported now.
    func judged(_ id: String, matchStub: Bool) {
        let deferred = state.withLockedValue { state in
            state.alreadyOnServer[id] = matchStub
            state.awaitingServerData.remove(id)
            return state.deferred.removeValue(forKey: id)
        }
        if let deferred { record(deferred.call, deferred.result, source: deferred.source) }
    }

    /// The client was closed: the calls without an outcome get none in this run, so every iteration ends.
    func clientClosed() {
        order.withLock {
            let finished = state.withLockedValue { state in
                state.clientClosed = true
                return Self.takeContinuations(&state)
            }
            for continuation in finished { continuation.finish() }
        }
    }

    /// Call `call` ended with `result`.
    func record(
        _ call: RestoredCall, _ result: Swift.Result<EJSONValue?, any Error>, source: RestoredCallOutcome.Source
    ) {
        order.withLock {
            let handOver:
                (RestoredCallOutcome, live: [AsyncStream<RestoredCallOutcome>.Continuation], complete: Bool)? =
                    state.withLockedValue { state in
                        let outcome: RestoredCallOutcome.Result
                        switch result {
                        case .success(let value): outcome = .succeeded(value)
                        case .failure(let error as MethodError) where error.kind == .clientClosed: return nil
                        case .failure where state.awaitingServerData.contains(call.id):
                            state.deferred[call.id] = (call, result, source)
                            return nil
                        case .failure(let error as MeteorError) where state.alreadyOnServer[call.id] == true:
                            outcome = .alreadyApplied(error)
                        case .failure(let error): outcome = .failed(error)
                        }
                        let element = RestoredCallOutcome(call: call, result: outcome, source: source)
                        state.outcomes.append(element)
                        guard state.outcomes.count >= calls.count else {
                            return (element, Array(state.continuations.values), false)
                        }
                        return (element, Self.takeContinuations(&state), true)
                    }
            guard let (element, live, complete) = handOver else { return }
            for continuation in live { continuation.yield(element) }
            if complete { for continuation in live { continuation.finish() } }
        }
    }

    /// The live iterations' continuations, taken out of `state` (to be finished outside the lock).
    private static func takeContinuations(_ state: inout State) -> [AsyncStream<RestoredCallOutcome>.Continuation] {
        defer { state.continuations.removeAll() }
        return Array(state.continuations.values)
    }

    /// Whether the server's versions show what the stub did: each document it left present is present with every
    /// field it set, at the value it set, and without the fields it removed; each it left absent is absent.
    static func serverHasStubEffect(stub: [StoredStubEffect], server: [DocumentKey: EJSONObject?]) -> Bool {
        guard !stub.isEmpty else { return false }
        for effect in stub {
            guard let serverEntry = server[effect.key] else { return false }
            switch (effect.set, serverEntry) {
            case (nil, nil): continue
            case (let written?, let onServer?):
                for (name, value) in written where name != "_id" {
                    guard let serverValue = onServer[name], EJSON.equals(serverValue, value) else { return false }
                }
                for name in effect.unset where onServer[name] != nil { return false }
            default: return false
            }
        }
        return true
    }
}
