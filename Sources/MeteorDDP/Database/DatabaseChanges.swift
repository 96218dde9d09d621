import EJSON
import NIOConcurrencyHelpers

/// What one write transaction changed, per document: before and after, consolidated (a document changed and changed
/// back has no entry; an add then a remove has none either).
///
/// For example:
/// ```swift
/// for await changes in client.database.changes {
///     for details in changes.documentChangeDetails where details.changeType == .update {
///         print(details.key, details.changedFields)
///     }
/// }
/// ```
public struct DatabaseChanges: Sendable, Equatable {
    /// The key of the ``DatabaseChanges`` in a `databaseDidChange` notification.
    public static let userInfoKey = "MeteorDDP.databaseChanges"

    /// Details per changed document (one each), in the order the documents were first changed, and an index by key
    /// built on first use: a write transaction lists its changes without hashing a key, and only consumers that
    /// look documents up pay for the index.
    private var storage: ChangeList

    /// Creates an empty change set.
    public init() {
        storage = ChangeList([])
    }

    /// Changes listed by a transaction: one entry per document, in first-change order.
    init(uniqueDetails: ContiguousArray<DocumentChangeDetails>, metadataChange: CacheMetadataChange = .init()) {
        storage = ChangeList(uniqueDetails)
        self.metadataChange = metadataChange
    }

    /// What changed of the cache's ``CacheMetadata`` (documents starting or stopping to hold pending writes, the data
    /// no longer being from the offline store); a transaction may change only that.
    public private(set) var metadataChange = CacheMetadataChange()

    /// Whether nothing changed: no document and no metadata.
    public var isEmpty: Bool { storage.details.isEmpty && metadataChange.isEmpty }

    /// How many documents changed.
    public var count: Int { storage.details.count }

    /// The documents that changed.
    public var affectedDocumentKeys: [DocumentKey] { storage.details.map(\.key) }

    /// Every document's change, in first-change order.
    public var documentChangeDetails: [DocumentChangeDetails] { Array(storage.details) }

    /// The change of one document, if it changed.
    public func changeDetails(for key: DocumentKey) -> DocumentChangeDetails? {
        storage.position(of: key).map { storage.details[$0] }
    }

    /// Records that a document went from `before` to `after`; equal versions record nothing.
    mutating func record(_ key: DocumentKey, before: EJSONObject?, after: EJSONObject?) {
        let change = DocumentChangeDetails(key: key, fieldsBefore: before, fieldsAfter: after)
        storage = storage.merging(ChangeList([change]), overwritingBefore: true)
    }

    /// Folds later changes into these, losslessly: each document keeps its earliest "before" and latest "after"
    /// (an add then an update is an add with the final fields; an add then a remove is nothing).
    public mutating func merge(_ later: DatabaseChanges) {
        storage = storage.merging(later.storage, overwritingBefore: false)
        metadataChange.merge(later.metadataChange)
    }

    /// These changes followed by `later`.
    public func merging(_ later: DatabaseChanges) -> DatabaseChanges {
        var merged = self
        merged.merge(later)
        return merged
    }

    /// These changes split in two: those of the documents `isTaken` picks, and the others (`nil` when it picks
    /// none: nothing is copied).
    func splitting(_ isTaken: (DocumentKey) -> Bool) -> (kept: DatabaseChanges, taken: [DocumentChangeDetails])? {
        guard let first = storage.details.firstIndex(where: { isTaken($0.key) }) else { return nil }
        var kept = ContiguousArray(storage.details[..<first])
        var taken = [storage.details[first]]
        for detail in storage.details[(first + 1)...] {
            if isTaken(detail.key) { taken.append(detail) } else { kept.append(detail) }
        }
        return (DatabaseChanges(uniqueDetails: kept, metadataChange: metadataChange), taken)
    }

    static func same(_ a: Document?, _ b: Document?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (let a?, let b?): return a.hasSameFields(as: b)
        default: return false
        }
    }

    /// Drops the entries whose version after equals the one before (changed and changed back, added and removed).
    static func droppingUnchanged(_ details: ContiguousArray<DocumentChangeDetails>) -> ContiguousArray<
        DocumentChangeDetails
    > {
        droppingUnchanged(details, checking: details.indices)
    }

    /// Drops the entries at `positions` whose version after equals the one before; the entries elsewhere are known
    /// to differ and are not compared. Usually every entry really changed, and nothing is copied.
    static func droppingUnchanged(
        _ details: ContiguousArray<DocumentChangeDetails>, checking positions: some Sequence<Int>
    ) -> ContiguousArray<DocumentChangeDetails> {
        var unchanged: Set<Int> = []
        for position in positions where same(details[position].documentBefore, details[position].documentAfter) {
            unchanged.insert(position)
        }
        guard !unchanged.isEmpty else { return details }
        var kept = ContiguousArray<DocumentChangeDetails>()
        kept.reserveCapacity(details.count - unchanged.count)
        for (position, detail) in details.enumerated() where !unchanged.contains(position) { kept.append(detail) }
        return kept
    }
}

/// The storage of a ``DatabaseChanges``: immutable details and their index by key, built once on first use.
final class ChangeList: Sendable {
    let details: ContiguousArray<DocumentChangeDetails>
    private let index = NIOLockedValueBox<[DocumentKey: Int]?>(nil)

    init(_ details: ContiguousArray<DocumentChangeDetails>) {
        self.details = details
    }

    /// Where the change of `key` is.
    func position(of key: DocumentKey) -> Int? {
        if details.count <= 8 { return details.firstIndex { $0.key == key } }
        return positionsByKey()[key]
    }

    /// Each document's position, built on first use and kept.
    private func positionsByKey() -> [DocumentKey: Int] {
        index.withLockedValue { index in
            if let index { return index }
            var built = [DocumentKey: Int](minimumCapacity: details.count)
            for (position, detail) in details.enumerated() { built[detail.key] = position }
            index = built
            return built
        }
    }

    /// These changes followed by `later`: each document keeps its earliest "before" (the later one's if
    /// `overwritingBefore`) and latest "after"; documents back where they started are dropped.
    func merging(_ later: ChangeList, overwritingBefore: Bool) -> ChangeList {
        var merged = details
        var positions = positionsByKey()
        for change in later.details {
            if let position = positions[change.key] {
                let before = overwritingBefore ? change.documentBefore : merged[position].documentBefore
                merged[position] = DocumentChangeDetails(
                    key: change.key, documentBefore: before, documentAfter: change.documentAfter)
            } else {
                positions[change.key] = merged.count
                merged.append(change)
            }
        }
        return ChangeList(DatabaseChanges.droppingUnchanged(merged))
    }
}

/// How one document changed in a transaction.
public struct DocumentChangeDetails: Sendable, Equatable {
    /// Whether the document appeared, changed or disappeared.
    public enum ChangeType: Sendable, Equatable {
        /// It did not exist before.
        case add
        /// It existed before and after.
        case update
        /// It does not exist after.
        case remove
    }

    /// A field's new state.
    public enum FieldChange: Sendable, Equatable {
        /// The field has this value now.
        case set(EJSONValue)
        /// The field was removed.
        case removed
    }

    /// The document.
    public let key: DocumentKey
    /// The document before the transaction (`nil`: it did not exist).
    public let documentBefore: Document?
    /// The document after the transaction (`nil`: it does not exist).
    public internal(set) var documentAfter: Document?

    init(key: DocumentKey, documentBefore: Document?, documentAfter: Document?) {
        self.key = key
        self.documentBefore = documentBefore
        self.documentAfter = documentAfter
    }

    init(key: DocumentKey, fieldsBefore: EJSONObject?, fieldsAfter: EJSONObject?) {
        self.init(
            key: key, documentBefore: fieldsBefore.map { Document(id: key.documentID, fields: $0) },
            documentAfter: fieldsAfter.map { Document(id: key.documentID, fields: $0) })
    }

    /// Its fields before the transaction (`nil`: it did not exist), decoded on each call.
    public var fieldsBefore: EJSONObject? { documentBefore?.fields }
    /// Its fields after the transaction (`nil`: it does not exist), decoded on each call.
    public var fieldsAfter: EJSONObject? { documentAfter?.fields }

    /// Whether the document appeared, changed or disappeared.
    public var changeType: ChangeType {
        if documentBefore == nil { return .add }
        if documentAfter == nil { return .remove }
        return .update
    }

    /// The fields that differ: new values, and removed fields marked ``FieldChange/removed`` (for a removed
    /// document every former field is marked removed).
    public var changedFields: [String: FieldChange] {
        Document.changedFields(from: documentBefore, to: documentAfter)
    }

    public static func == (lhs: DocumentChangeDetails, rhs: DocumentChangeDetails) -> Bool {
        lhs.key == rhs.key && DatabaseChanges.same(lhs.documentBefore, rhs.documentBefore)
            && DatabaseChanges.same(lhs.documentAfter, rhs.documentAfter)
    }
}

extension DatabaseChanges {
    /// Equal when the same documents changed the same way (in any order).
    public static func == (lhs: DatabaseChanges, rhs: DatabaseChanges) -> Bool {
        lhs.count == rhs.count && lhs.metadataChange == rhs.metadataChange
            && lhs.storage.details.allSatisfy { rhs.changeDetails(for: $0.key) == $0 }
    }
}
