import EJSON
import NIOConcurrencyHelpers

/// A live query's result at one moment, decoded.
public struct TypedLiveQuerySnapshot<Model: Sendable>: Sendable {
    /// The matching documents' ids, in the result's order.
    public let ids: [String]
    /// The decoded documents, in the same order.
    public let values: [Model]
    /// How the result differs from the previous snapshot's (indexes into ``values``).
    ///
    /// The first snapshot's diff is empty: its values are the whole result, nothing changed yet.
    public let diff: LiveQueryDiff
    /// Whether the documents hold local writes the server has not confirmed yet, and whether they are from the
    /// offline store (``LiveQuerySnapshot/metadata``).
    public internal(set) var metadata = ResultMetadata()
}

/// A live query whose snapshots hold decoded values, cached per document version: a transaction that changes one
/// document of the result decodes that document only.
///
/// For example:
/// ```swift
/// let players = client.collection("players", as: Player.self)
/// for try await snapshot in try players.observe([:], FindOptions(sort: ["score": -1])).snapshots {
///     print(snapshot.values.map(\.name), snapshot.diff)
/// }
/// ```
public final class TypedLiveQuery<Model: Decodable & Sendable>: Sendable {
    /// The untyped live query.
    public let untyped: LiveQuery
    let cache = DecodedDocuments<Model>()

    /// A typed view of any live query (``TypedCollection/observe(_:_:)`` makes one for a collection).
    public init(_ liveQuery: LiveQuery) {
        untyped = liveQuery
    }

    /// The snapshots, decoded: the current one first, then one per transaction that changes the result (a slow
    /// consumer gets the newest, with the diff from the one it took last). Ends with the `DecodingError` of a document
    /// that does not decode, or when the live query stops.
    public var snapshots: AsyncThrowingMapSequence<LiveQuerySnapshots, TypedLiveQuerySnapshot<Model>> {
        let cache = self.cache
        return untyped.snapshots.map { snapshot throws in try cache.decode(snapshot) }
    }

    /// Stops the live query.
    public func stop() { untyped.stop() }

    /// How many documents were decoded so far (each document version once).
    public var decodeCount: Int { cache.decodeCount }
}

/// Decoded values by document id, each with the document version it was decoded from.
final class DecodedDocuments<Model: Decodable & Sendable>: Sendable {
    private struct State {
        var values: [String: (version: Document, value: Model)] = [:]
        var decodeCount = 0
    }

    private let state = NIOLockedValueBox(State())

    var decodeCount: Int { state.withLockedValue { $0.decodeCount } }

    /// The snapshot decoded, reusing the values of document versions decoded before; forgets documents that left.
    func decode(_ snapshot: LiveQuerySnapshot) throws -> TypedLiveQuerySnapshot<Model> {
        TypedLiveQuerySnapshot(
            ids: snapshot.documents.map(\.id), values: try decode(snapshot.documents), diff: snapshot.diff,
            metadata: snapshot.metadata)
    }

    /// The documents decoded (a document listed twice is decoded once), reusing the values of document versions
    /// decoded before; forgets documents not listed. Decoding (the model's own code) runs outside the lock.
    func decode(_ documents: [Document]) throws -> [Model] {
        var pass = beginPass(expecting: documents.count)
        let values = try documents.map { try value(of: $0, in: &pass) }
        end(pass)
        return values
    }

    /// One decoding of a result: the documents it holds are kept, the others forgotten at ``end(_:)``.
    struct Pass {
        fileprivate let cached: [String: (version: Document, value: Model)]
        fileprivate var kept: [String: (version: Document, value: Model)]
        fileprivate var decoded = 0
    }

    func beginPass(expecting count: Int) -> Pass {
        var kept: [String: (version: Document, value: Model)] = [:]
        kept.reserveCapacity(count)
        return Pass(cached: state.withLockedValue { $0.values }, kept: kept)
    }

    /// The value of `document`: the one decoded before for this version, or a new decoding.
    func value(of document: Document, in pass: inout Pass) throws -> Model {
        let id = document.id
        // The same version object, or (for a projection, which makes new objects) an equal one.
        if let entry = pass.kept[id] ?? pass.cached[id],
            entry.version.isSameVersion(as: document) || entry.version == document
        {
            pass.kept[id] = entry
            return entry.value
        }
        let value = try EJSONDecoder().decode(Model.self, from: document.ejsonValue)
        pass.decoded += 1
        pass.kept[id] = (document, value)
        return value
    }

    /// Keeps what the pass decoded or reused, and forgets the rest.
    func end(_ pass: Pass) {
        state.withLockedValue { state in
            state.values = pass.kept
            state.decodeCount += pass.decoded
        }
    }
}
