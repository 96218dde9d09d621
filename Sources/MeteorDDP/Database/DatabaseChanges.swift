import EJSON
import OrderedCollections

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
    /// The key of the ``DatabaseChanges`` in a ``Foundation/Notification/Name/databaseDidChange`` notification.
    public static let userInfoKey = "MeteorDDP.databaseChanges"

    /// Details per changed document, in the order the documents were first changed.
    private(set) var details: OrderedDictionary<DocumentKey, DocumentChangeDetails> = [:]

    /// Creates an empty change set.
    public init() {}

    /// Whether nothing changed.
    public var isEmpty: Bool { details.isEmpty }

    /// The documents that changed.
    public var affectedDocumentKeys: [DocumentKey] { Array(details.keys) }

    /// Every document's change, in first-change order.
    public var documentChangeDetails: [DocumentChangeDetails] { Array(details.values) }

    /// The change of one document, if it changed.
    public func changeDetails(for key: DocumentKey) -> DocumentChangeDetails? { details[key] }

    /// Records that a document went from `before` to `after`; equal versions record nothing.
    mutating func record(_ key: DocumentKey, before: EJSONObject?, after: EJSONObject?) {
        recordDocuments(key, before: before.map { Document(id: key.documentID, fields: $0) }, after: after.map { Document(id: key.documentID, fields: $0) })
    }

    /// Records that a document went from `before` to `after`; equal versions record nothing.
    mutating func recordDocuments(_ key: DocumentKey, before: Document?, after: Document?) {
        if Self.same(before, after) {
            details.removeValue(forKey: key)
        } else {
            details[key] = DocumentChangeDetails(key: key, documentBefore: before, documentAfter: after)
        }
    }

    /// Notes a write inside a transaction: the first write keeps the document's version from before, every write
    /// sets the version after (one hash lookup per write; unchanged documents are dropped at commit).
    mutating func noteWrite(_ key: DocumentKey, previous: Document?, after: Document?) {
        details[key, default: DocumentChangeDetails(key: key, documentBefore: previous, documentAfter: nil)].documentAfter = after
    }

    /// Drops the documents whose version after equals the one before (changed and changed back, added and removed).
    mutating func dropUnchanged() {
        details.removeAll { Self.same($0.value.documentBefore, $0.value.documentAfter) }
    }

    /// Folds later changes into these, losslessly: each document keeps its earliest "before" and latest "after"
    /// (an add then an update is an add with the final fields; an add then a remove is nothing).
    public mutating func merge(_ later: DatabaseChanges) {
        for (key, change) in later.details {
            let before = details[key].map { $0.documentBefore } ?? change.documentBefore
            recordDocuments(key, before: before, after: change.documentAfter)
        }
    }

    /// These changes followed by `later`.
    public func merging(_ later: DatabaseChanges) -> DatabaseChanges {
        var merged = self
        merged.merge(later)
        return merged
    }

    static func same(_ a: Document?, _ b: Document?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (let a?, let b?): return a.hasSameFields(as: b)
        default: return false
        }
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
        self.init(key: key, documentBefore: fieldsBefore.map { Document(id: key.documentID, fields: $0) },
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
        lhs.key == rhs.key && DatabaseChanges.same(lhs.documentBefore, rhs.documentBefore) && DatabaseChanges.same(lhs.documentAfter, rhs.documentAfter)
    }
}

extension DatabaseChanges {
    public static func == (lhs: DatabaseChanges, rhs: DatabaseChanges) -> Bool {
        lhs.details.count == rhs.details.count && lhs.details.allSatisfy { rhs.details[$0.key] == $0.value }
    }
}
