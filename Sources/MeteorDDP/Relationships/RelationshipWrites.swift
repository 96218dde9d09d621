import EJSON

/// What removing a document through a ``Relationship`` does to the references to it.
public enum ReferencesOnRemoval: Sendable {
    /// Leaves them: they read as absent (Meteor's behaviour: nothing cascades).
    case leaveDangling
    /// Clears every reference to it that the cache holds, in the primary reference fields and in the mirror: a
    /// to-one field is unset, the id is pulled from arrays. Documents the client does not hold (not published) keep
    /// theirs: the server's own code must clear those.
    case clear
}

extension Relationship {
    // MARK: - Writing references

    /// Relates the source document `sourceID` to the target `targetID` (``Document/id``s): writes the reference and,
    /// stored two-way, its mirror, through the collections' update methods (their stubs, ids and random seeds, as
    /// any write), every stub in one transaction so observers see one change. A to-one reference replaces the one
    /// before, whose mirror loses the source; `referencedBy` moves the target from the source it named.
    ///
    /// - Throws: The server's refusal of a write (the stubs' writes are then undone by the server's data).
    public func link(_ sourceID: String, to targetID: String) async throws {
        let snapshot = database.snapshot
        var writes: [Write] = []
        switch storage {
        case .idIn(let field):
            writes.append(.update(source.name, sourceID, "$set", field, idValue(targetID)))
            if let mirror {
                writes.append(.update(target.name, targetID, "$addToSet", mirror, idValue(sourceID)))
                if let old = reference(in: source.name, sourceID, field, snapshot), old != targetID {
                    writes.append(.update(target.name, old, "$pull", mirror, idValue(sourceID)))
                }
            }
        case .referencedBy(let field):
            writes.append(.update(target.name, targetID, "$set", field, idValue(sourceID)))
            if let mirror {
                writes.append(.update(source.name, sourceID, "$addToSet", mirror, idValue(targetID)))
                if let old = reference(in: target.name, targetID, field, snapshot), old != sourceID {
                    writes.append(.update(source.name, old, "$pull", mirror, idValue(targetID)))
                }
            }
        case .idsIn(let field):
            writes.append(.update(source.name, sourceID, "$addToSet", field, idValue(targetID)))
            if let mirror { writes.append(.update(target.name, targetID, "$addToSet", mirror, idValue(sourceID))) }
        }
        try await perform(writes)
    }

    /// Ends the relation of the source document `sourceID` with the target `targetID`: a to-one or `referencedBy`
    /// reference naming the other is unset, an `idsIn` array loses the id, and the mirror, stored two-way, loses its
    /// side; in one transaction, as ``link(_:to:)``. A reference naming another document is left alone.
    ///
    /// - Throws: The server's refusal of a write.
    public func unlink(_ sourceID: String, from targetID: String) async throws {
        let snapshot = database.snapshot
        var writes: [Write] = []
        switch storage {
        case .idIn(let field):
            if reference(in: source.name, sourceID, field, snapshot) == targetID {
                writes.append(.update(source.name, sourceID, "$unset", field, ""))
            }
            if let mirror { writes.append(.update(target.name, targetID, "$pull", mirror, idValue(sourceID))) }
        case .referencedBy(let field):
            if reference(in: target.name, targetID, field, snapshot) == sourceID {
                writes.append(.update(target.name, targetID, "$unset", field, ""))
            }
            if let mirror { writes.append(.update(source.name, sourceID, "$pull", mirror, idValue(targetID))) }
        case .idsIn(let field):
            writes.append(.update(source.name, sourceID, "$pull", field, idValue(targetID)))
            if let mirror { writes.append(.update(target.name, targetID, "$pull", mirror, idValue(sourceID))) }
        }
        try await perform(writes)
    }

    /// Removes the source document `id` through its collection's remove method; with ``ReferencesOnRemoval/clear``,
    /// the references to it the cache holds are cleared in the same transaction.
    ///
    /// - Throws: The server's refusal of a write.
    public func removeSource(_ id: String, references: ReferencesOnRemoval = .leaveDangling) async throws {
        var writes: [Write] = []
        if references == .clear {
            let snapshot = database.snapshot
            switch storage {
            case .idIn, .idsIn:
                if let mirror { writes += clearing(id, in: target.name, array: mirror, snapshot) }
            case .referencedBy(let field):
                writes += clearing(id, in: target.name, field: field, snapshot)
            }
        }
        writes.append(.remove(source.name, id))
        try await perform(writes)
    }

    /// Removes the target document `id` through its collection's remove method; with ``ReferencesOnRemoval/clear``,
    /// the references to it the cache holds are cleared in the same transaction.
    ///
    /// - Throws: The server's refusal of a write.
    public func removeTarget(_ id: String, references: ReferencesOnRemoval = .leaveDangling) async throws {
        var writes: [Write] = []
        if references == .clear {
            let snapshot = database.snapshot
            switch storage {
            case .idIn(let field):
                writes += clearing(id, in: source.name, field: field, snapshot)
            case .idsIn(let field):
                writes += clearing(id, in: source.name, array: field, snapshot)
            case .referencedBy:
                if let mirror { writes += clearing(id, in: source.name, array: mirror, snapshot) }
            }
        }
        writes.append(.remove(target.name, id))
        try await perform(writes)
    }

    // MARK: - Writes

    /// One write through a collection's method.
    private enum Write {
        /// `/collection/update` of one document by id with `{operator: {field: value}}`.
        case update(String, String, String, String, EJSONValue)
        /// `/collection/remove` of one document by id.
        case remove(String, String)

        var call: (name: String, params: [EJSONValue]) {
            switch self {
            case .update(let collection, let id, let operation, let field, let value):
                var fields = EJSONObject()
                fields[field] = value
                var modifier = EJSONObject()
                modifier[operation] = .object(fields)
                return ("/\(collection)/update", [["_id": DDPCollection.idValue(id)], .object(modifier), [:]])
            case .remove(let collection, let id):
                return ("/\(collection)/remove", [["_id": DDPCollection.idValue(id)]])
            }
        }
    }

    private func perform(_ writes: [Write]) async throws {
        guard !writes.isEmpty else { return }
        _ = try await source.untyped.client.callInOneTransaction(writes.map(\.call))
    }

    /// The writes that unset every single reference to `id` in `field` of `collection`'s documents the cache holds.
    private func clearing(_ id: String, in collection: String, field: String, _ snapshot: DatabaseSnapshot) -> [Write] {
        snapshot.allDocuments(in: collection).compactMap { document in
            guard RelationshipStorage.documentID(named: document[field]) == id else { return nil }
            return .update(collection, document.id, "$unset", field, "")
        }
    }

    /// The writes that pull `id` from every array of references `field` of `collection`'s documents the cache holds.
    private func clearing(_ id: String, in collection: String, array field: String, _ snapshot: DatabaseSnapshot)
        -> [Write]
    {
        snapshot.allDocuments(in: collection).compactMap { document in
            guard case .array(let values)? = document[field],
                values.contains(where: { RelationshipStorage.documentID(named: $0) == id })
            else { return nil }
            return .update(collection, document.id, "$pull", field, idValue(id))
        }
    }

    /// The id a document's single reference `field` names, from the cache.
    private func reference(in collection: String, _ id: String, _ field: String, _ snapshot: DatabaseSnapshot)
        -> String?
    {
        snapshot.document(DocumentKey(collectionName: collection, documentID: id))
            .flatMap { RelationshipStorage.documentID(named: $0[field]) }
    }

    /// A document id as a reference holds it (an ObjectID's hex digits become the ObjectID).
    private func idValue(_ id: String) -> EJSONValue { DDPCollection.idValue(id) }
}
