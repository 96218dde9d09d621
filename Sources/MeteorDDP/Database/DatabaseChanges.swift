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
        if Self.same(before, after) {
            details.removeValue(forKey: key)
        } else {
            details[key] = DocumentChangeDetails(key: key, fieldsBefore: before, fieldsAfter: after)
        }
    }

    /// Notes a write inside a transaction: the first write keeps the document's version from before, every write
    /// sets the version after (one hash lookup per write; unchanged documents are dropped at commit).
    mutating func noteWrite(_ key: DocumentKey, previous: EJSONObject?, after: EJSONObject?) {
        details[key, default: DocumentChangeDetails(key: key, fieldsBefore: previous, fieldsAfter: nil)].fieldsAfter = after
    }

    /// Drops the documents whose version after equals the one before (changed and changed back, added and removed).
    mutating func dropUnchanged() {
        details.removeAll { Self.same($0.value.fieldsBefore, $0.value.fieldsAfter) }
    }

    /// Folds later changes into these, losslessly: each document keeps its earliest "before" and latest "after"
    /// (an add then an update is an add with the final fields; an add then a remove is nothing).
    public mutating func merge(_ later: DatabaseChanges) {
        for (key, change) in later.details {
            let before = details[key].map { $0.fieldsBefore } ?? change.fieldsBefore
            record(key, before: before, after: change.fieldsAfter)
        }
    }

    /// These changes followed by `later`.
    public func merging(_ later: DatabaseChanges) -> DatabaseChanges {
        var merged = self
        merged.merge(later)
        return merged
    }

    static func same(_ a: EJSONObject?, _ b: EJSONObject?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (let a?, let b?): return EJSONValue.object(a) == .object(b)
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
    /// Its fields before the transaction (`nil`: it did not exist).
    public let fieldsBefore: EJSONObject?
    /// Its fields after the transaction (`nil`: it does not exist).
    public internal(set) var fieldsAfter: EJSONObject?

    /// Whether the document appeared, changed or disappeared.
    public var changeType: ChangeType {
        if fieldsBefore == nil { return .add }
        if fieldsAfter == nil { return .remove }
        return .update
    }

    /// The fields that differ: new values, and removed fields marked ``FieldChange/removed`` (for a removed
    /// document every former field is marked removed).
    public var changedFields: [String: FieldChange] {
        var changes: [String: FieldChange] = [:]
        let before = fieldsBefore ?? [:]
        let after = fieldsAfter ?? [:]
        for (name, value) in after where before[name] != value { changes[name] = .set(value) }
        for name in before.keys where after[name] == nil { changes[name] = .removed }
        return changes
    }

    public static func == (lhs: DocumentChangeDetails, rhs: DocumentChangeDetails) -> Bool {
        lhs.key == rhs.key && DatabaseChanges.same(lhs.fieldsBefore, rhs.fieldsBefore) && DatabaseChanges.same(lhs.fieldsAfter, rhs.fieldsAfter)
    }
}

extension DatabaseChanges {
    public static func == (lhs: DatabaseChanges, rhs: DatabaseChanges) -> Bool {
        lhs.details.count == rhs.details.count && lhs.details.allSatisfy { rhs.details[$0.key] == $0.value }
    }
}
