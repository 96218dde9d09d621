import EJSON

/// Server data as events of the core (LC `_processOneDataMessage`, `_process_added`, `_process_changed`,
/// `_process_removed`): a document message goes to the cache, to the server's copy of a document a pending stub
/// wrote (kept aside until the stub's method is done), or nowhere (an undeclared collection at its limit). Every
/// frame of a flood passes here: the answer is a small value, nothing is allocated.
extension ClientCore {
    /// Where a document message goes.
    enum DataRouting: Equatable {
        /// Into the cache.
        case toCache
        /// Into the kept-aside server copy of a stub-written document, with the anomaly to log, if any.
        case keptAside(ServerDocumentBuffer.Anomaly?)
        /// Nowhere: its collection was never declared and the cache holds as many such documents as it may.
        /// `report`: the first time for this collection (the client reports the limit).
        case dropped(report: Bool)
    }

    /// `added`. `fields` is read only when a stub-written document takes it.
    @inline(__always)
    mutating func serverAdded(_ key: DocumentKey, fields: @autoclosure () -> EJSONObject) -> DataRouting {
        let admission = session.undeclaredCollections.added(key.collectionName, key.documentID)
        guard admission == .apply else { return .dropped(report: admission == .dropAndReport) }
        return keptAsideNoted(session.serverDocuments.serverAdded(key, fields: fields()), key)
    }

    /// `changed`. `fields` is read only when a stub-written document takes it.
    @inline(__always)
    mutating func serverChanged(_ key: DocumentKey, fields: @autoclosure () -> EJSONObject, cleared: [String])
        -> DataRouting
    {
        guard session.undeclaredCollections.changed(key.collectionName, key.documentID) == .apply else {
            return .dropped(report: false)
        }
        return keptAsideNoted(session.serverDocuments.serverChanged(key, fields: fields(), cleared: cleared), key)
    }

    /// `removed`.
    mutating func serverRemoved(_ key: DocumentKey) -> DataRouting {
        guard session.undeclaredCollections.removed(key.collectionName, key.documentID) == .apply else {
            return .dropped(report: false)
        }
        return keptAsideNoted(session.serverDocuments.serverRemoved(key), key)
    }

    /// The routing, noting with ``PendingStubMode/rebase`` a change of a kept-aside copy or of a document a pending
    /// stub read (the stubs concerned are replayed over it at the end of the burst).
    @inline(__always)
    private mutating func keptAsideNoted(_ routing: ServerDocumentBuffer.Routing, _ key: DocumentKey) -> DataRouting {
        if session.stubReplays.isOn {
            let keptAside: Bool = if case .keptAside = routing { true } else { false }
            session.stubReplays.serverDataChanged(key, keptAside: keptAside)
        }
        return DataRouting(routing)
    }

    /// The app declared `collection` (``DDPClient/collection(_:idGeneration:)``): its data is no longer bounded.
    mutating func collectionDeclared(_ collection: String) {
        session.undeclaredCollections.declare(collection)
    }

    /// `added` or `changed` (``Input/documentReceived(_:held:)``): held while the session waits for quiescence
    /// (unless quiescence released it), else routed: to the cache, or not (kept aside, dropped).
    @inline(__always)
    mutating func documentReceivedActions(_ message: consuming DocumentMessage, held: Bool) -> [Action] {
        if !held, isHoldingForQuiescence { return holdActions(.document(message)) }
        return documentActions(message)
    }

    /// `removed` (``Input/removedReceived(collection:id:held:)``), as `added` and `changed`.
    mutating func removedActions(collection: String, id: String, held: Bool) -> [Action] {
        if !held, isHoldingForQuiescence { return holdActions(.message(.removed(collection: collection, id: id))) }
        let key = DocumentKey(collectionName: collection, documentID: MongoID.documentID(fromWire: id))
        let routing = serverRemoved(key)
        guard case .toCache = routing else { return [.dataNotCached(routing, key)] }
        return [.applyToCache(.removed(key))]
    }

    /// `added` and `changed`, their fields packed. A stub-written document's server copy gets the fields decoded.
    @inline(__always)
    private mutating func documentActions(_ message: consuming DocumentMessage) -> [Action] {
        let routing =
            switch message.kind {
            case .added: serverAdded(message.key, fields: message.fields.fields)
            case .changed: serverChanged(message.key, fields: message.fields.fields, cleared: message.cleared)
            }
        guard case .toCache = routing else { return [.dataNotCached(routing, message.key)] }
        // The message's key, fields and cleared names move on into the update (no copy of them per frame).
        return [.applyToCache(CacheUpdate(message))]
    }

    /// Holds a data message until quiescence: the limit reported when reached, the held messages applied when
    /// quiescence comes.
    mutating func holdActions(_ message: consuming IncomingMessage) -> [Action] {
        let outcome = holdUntilQuiescence(message)
        var actions: [Action] = []
        if let (subscriptions, methods) = outcome.limitReached {
            actions.append(
                .report(
                    .limitReached(
                        "held \(maxMessagesHeldForQuiescence) data messages waiting for quiescence "
                            + "(subscriptions not ready: \(subscriptions), methods without updated: \(methods)); "
                            + "applying them now")))
        }
        if let hold = outcome.quiescent { actions.append(.applyQuiescence(hold)) }
        return actions
    }
}

extension ClientCore.DataRouting {
    @inline(__always)
    init(_ routing: ServerDocumentBuffer.Routing) {
        switch routing {
        case .toCache: self = .toCache
        case .keptAside(let anomaly): self = .keptAside(anomaly)
        }
    }
}
