import EJSON
import NIOConcurrencyHelpers
import Observation

/// A live related query as an `Observable` model: SwiftUI views that read ``values`` update when a document on
/// either side of the relationship changes.
///
/// For example (SwiftUI):
/// ```swift
/// struct Lists: View {
///     @State private var lists: ObservedRelatedQuery<TodoList, Todo>
///
///     init(lists: TypedCollection<TodoList>, todos: TypedCollection<Todo>) throws {
///         _lists = State(
///             initialValue: try lists.toMany(todos, referencedBy: "listId")
///                 .observed([:], FindOptions(sort: ["name": 1]), relatedOptions: FindOptions(sort: ["createdAt": 1])))
///     }
///
///     var body: some View {
///         List(lists.values, id: \.id) { entry in
///             Section(entry.value.name) { ForEach(entry.related, id: \._id) { Text($0.text) } }
///         }
///     }
/// }
/// ```
///
/// It changes once per database transaction that changes its result, on its ``ObservationScheduler`` (the main actor
/// by default), in one mutation: ``values``, ``ids`` and ``diff`` change together. Reading is safe from any thread.
/// Documents are decoded once per version. The observation lasts until ``stop()`` or until the model is released.
@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *)
public final class ObservedRelatedQuery<Source: Codable & Sendable, Target: Codable & Sendable>: Observable,
    @unchecked Sendable
{
    // @unchecked because the mutable state is in `state`, protected by its lock.

    private struct State {
        var snapshot: RelatedLiveQuerySnapshot<Source, Target>?
        var error: (any Error)?
    }

    private let registrar = ObservationRegistrar()
    private let state = NIOLockedValueBox(State())
    private let liveQuery: RelatedLiveQuery<Source, Target>
    private let token: NIOLockedValueBox<ObservationToken?> = NIOLockedValueBox(nil)

    init(_ liveQuery: RelatedLiveQuery<Source, Target>, scheduler: ObservationScheduler) {
        self.liveQuery = liveQuery
        let decoder = liveQuery.decoder
        let observation = liveQuery.onChange(on: scheduler.dispatchQueue) { [weak self] snapshot in
            guard let self else { return }
            let decoded = Result { try decoder.decode(snapshot) }
            self.registrar.withMutation(of: self, keyPath: \.snapshot) {
                self.state.withLockedValue { state in
                    switch decoded {
                    case .success(let typed): state.snapshot = typed
                    case .failure(let error): state.error = error
                    }
                }
            }
        }
        token.withLockedValue { $0 = observation }
    }

    deinit {
        stop()
    }

    /// The latest result (`nil` until the first one arrives).
    public var snapshot: RelatedLiveQuerySnapshot<Source, Target>? {
        registrar.access(self, keyPath: \.snapshot)
        return state.withLockedValue { $0.snapshot }
    }

    /// The source documents with their related documents, in the query's order (empty until the first result).
    public var values: [Related<Source, Target>] { snapshot?.values ?? [] }
    /// The source documents' ids, in the same order.
    public var ids: [String] { snapshot?.ids ?? [] }
    /// How the latest result differs from the one before.
    public var diff: LiveQueryDiff { snapshot?.diff ?? LiveQueryDiff() }
    /// Whether the first result arrived.
    public var isLoaded: Bool { snapshot != nil }
    /// The `DecodingError` of a document that does not decode (the result then stays as it was).
    public var error: (any Error)? {
        registrar.access(self, keyPath: \.snapshot)
        return state.withLockedValue { $0.error }
    }

    /// How many documents were decoded so far (each document version once).
    public var decodeCount: Int { liveQuery.decodeCount }

    /// Ends the observation; the model keeps its last result.
    public func stop() {
        token.withLockedValue { $0 }?.cancel()
        liveQuery.stop()
    }
}

extension Relationship {
    /// A live related query as an `Observable` model, changed on `scheduler` (the main actor by default).
    @available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *)
    public func observed(
        _ selector: EJSONValue = [:], _ options: FindOptions = FindOptions(),
        relatedOptions: FindOptions = FindOptions(), scheduler: ObservationScheduler = .mainActor
    ) throws(QueryError) -> ObservedRelatedQuery<Source, Target> {
        ObservedRelatedQuery(try observe(selector, options, relatedOptions: relatedOptions), scheduler: scheduler)
    }
}
