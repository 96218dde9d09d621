import EJSON
import NIOConcurrencyHelpers

/// The results of calls made together, handed over once, when all of them arrived: every value, or the first error
/// in call order.
final class CallResults: Sendable {
    private let state: NIOLockedValueBox<[Result<EJSONValue?, any Error>?]>
    private let done: @Sendable (Result<[EJSONValue?], any Error>) -> Void

    init(count: Int, done: @escaping @Sendable (Result<[EJSONValue?], any Error>) -> Void) {
        state = NIOLockedValueBox(Array(repeating: nil, count: count))
        self.done = done
    }

    func complete(_ index: Int, _ result: Result<EJSONValue?, any Error>) {
        let all: [Result<EJSONValue?, any Error>]? = state.withLockedValue { results in
            guard results[index] == nil else { return nil } // a call completes once
            results[index] = result
            return results.contains { $0 == nil } ? nil : results.map { $0! }
        }
        guard let all else { return }
        done(Result { try all.map { try $0.get() } })
    }
}
