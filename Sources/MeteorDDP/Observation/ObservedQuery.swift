import EJSON
import NIOConcurrencyHelpers
import Observation

/// A typed live query as an `Observable` model: SwiftUI views that read ``values`` update when the result changes.
///
/// For example (SwiftUI):
/// ```swift
/// struct Todos: View {
///     @State private var todos: ObservedQuery<Todo>
///
///     init(client: DDPClient, listID: String) throws {
///         _todos = State(
///             initialValue: try client.collection("todos", as: Todo.self)
///                 .observed(["listId": .string(listID)], FindOptions(sort: ["createdAt": 1])))
///     }
///
///     var body: some View { List(todos.values, id: \._id) { Text($0.text) } }
/// }
/// ```
///
/// It changes once per database transaction that changes its result, on its ``ObservationScheduler`` (the main actor
/// by default), in one mutation: ``values``, ``ids`` and ``diff`` change together. Reading is safe from any thread.
/// Documents are decoded once per version. The observation lasts until ``stop()`` or until the model is released.
@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *)
public final class ObservedQuery<Model: Decodable & Sendable>: Observable, @unchecked Sendable {
    // @unchecked because the mutable state is in `state`, protected by its lock.

    private struct State {
        var snapshot: TypedLiveQuerySnapshot<Model>?
        var error: (any Error)?
        var updates = 0
    }

    private let registrar = ObservationRegistrar()
    private let state = NIOLockedValueBox(State())
    private let liveQuery: TypedLiveQuery<Model>
    private let token: NIOLockedValueBox<ObservationToken?> = NIOLockedValueBox(nil)

    init(_ liveQuery: TypedLiveQuery<Model>, scheduler: ObservationScheduler) {
        self.liveQuery = liveQuery
        let cache = liveQuery.cache
        let observation = liveQuery.untyped.onChange(on: scheduler.dispatchQueue) { [weak self] snapshot in
            guard let self else { return }
            let decoded = Result { try cache.decode(snapshot) }
            self.registrar.withMutation(of: self, keyPath: \.snapshot) {
                self.state.withLockedValue { state in
                    switch decoded {
                    case .success(let typed): state.snapshot = typed
                    case .failure(let error): state.error = error
                    }
                    state.updates += 1
                }
            }
        }
        token.withLockedValue { $0 = observation }
    }

    deinit {
        stop()
    }

    /// The latest result (`nil` until the first one arrives).
    public var snapshot: TypedLiveQuerySnapshot<Model>? {
        registrar.access(self, keyPath: \.snapshot)
        return state.withLockedValue { $0.snapshot }
    }

    /// The matching documents, decoded, in the query's order (empty until the first result).
    public var values: [Model] { snapshot?.values ?? [] }
    /// Their ids, in the same order.
    public var ids: [String] { snapshot?.ids ?? [] }
    /// How the latest result differs from the one before.
    public var diff: LiveQueryDiff { snapshot?.diff ?? LiveQueryDiff() }
    /// Whether the first result arrived.
    public var isLoaded: Bool { snapshot != nil }
    /// Whether the result holds local writes the server has not confirmed yet (a pending stub's, Firestore's
    /// `hasPendingWrites`); changes with one update when that changes.
    public var hasPendingWrites: Bool { snapshot?.metadata.hasPendingWrites ?? false }
    /// Whether the result was restored from the offline store and the first connection has not confirmed it yet
    /// (Firestore's `fromCache`).
    public var isFromCache: Bool { snapshot?.metadata.isFromCache ?? false }
    /// The `DecodingError` of a document that does not decode as `Model` (the result then stays as it was).
    public var error: (any Error)? {
        registrar.access(self, keyPath: \.snapshot)
        return state.withLockedValue { $0.error }
    }

    /// How many times the model changed (one per transaction that changed the result).
    var updateCount: Int { state.withLockedValue { $0.updates } }
    /// How many documents were decoded so far (each document version once).
    public var decodeCount: Int { liveQuery.decodeCount }

    /// Ends the observation; the model keeps its last result.
    public func stop() {
        token.withLockedValue { $0 }?.cancel()
        liveQuery.stop()
    }
}

extension TypedCollection {
    /// A live query as an `Observable` model, changed on `scheduler` (the main actor by default).
    @available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *)
    public func observed(
        _ selector: EJSONValue = [:], _ options: FindOptions = FindOptions(),
        scheduler: ObservationScheduler = .mainActor
    ) throws(QueryError) -> ObservedQuery<Model> {
        ObservedQuery(try observe(selector, options), scheduler: scheduler)
    }
}
