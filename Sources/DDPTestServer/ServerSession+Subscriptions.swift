import Dispatch
import EJSON
import MeteorDDP

/// A live subscription of a session. Confined to the server queue.
struct SubscriptionRecord {
    let id: String
    let name: String
    let params: [EJSONValue]
    var context: PublicationContext
    var cursors: [Cursor] = []
    var ready = false
}

/// The id of the built-in publication of the logged-in user's document (Meteor's universal `users` publication).
let userPublicationID = "__meteor_user"

// MARK: - Publications (server queue)

extension ServerSession {
    func processInbox() {
        guard let server, !busy, !ended else { return }
        while !busy, !inbox.isEmpty {
            let message = inbox.removeFirst()
            switch message {
            case .sub(let id, let name, let params):
                let latency = server.subscriptionLatency
                if latency > .zero {
                    busy = true
                    server.queue.asyncAfter(deadline: DispatchTime.now() + Self.interval(latency)) {
                        self.busy = false
                        guard !self.ended else { return }
                        self.startSubscription(id: id, name: name, params: params, server: server)
                        self.processInbox()
                    }
                } else {
                    startSubscription(id: id, name: name, params: params, server: server)
                }
            case .unsub(let id):
                stopSubscription(id, error: nil)
            case .method(let id, let name, let params, let seed):
                let latency = server.methodLatency
                if server.heldMethodNames.contains(name) {
                    busy = true
                    server.heldMethodCalls.append {
                        self.busy = false
                        guard !self.ended else { return }
                        self.runMethod(id: id, name: name, params: params, seed: seed, server: server)
                        self.processInbox()
                    }
                } else if latency > .zero {
                    busy = true
                    server.queue.asyncAfter(deadline: DispatchTime.now() + Self.interval(latency)) {
                        self.busy = false
                        guard !self.ended else { return }
                        self.runMethod(id: id, name: name, params: params, seed: seed, server: server)
                        self.processInbox()
                    }
                } else {
                    runMethod(id: id, name: name, params: params, seed: seed, server: server)
                }
            default:
                break
            }
        }
        if isIdle { server.sessionBecameIdle() }
    }

    /// Whether nothing waits or runs: no message in the inbox, no slow method or publication under way.
    var isIdle: Bool { ended || (!busy && inbox.isEmpty) }

    static func interval(_ duration: Duration) -> DispatchTimeInterval {
        .nanoseconds(
            Int(duration.components.seconds) * 1_000_000_000 + Int(duration.components.attoseconds / 1_000_000_000))
    }

    private func startSubscription(id: String, name: String, params: [EJSONValue], server: DDPTestServer) {
        guard subscriptions[id] == nil else { return }
        if let refusal = server.rateLimiter.check(.subscription, name: name, connection: ObjectIdentifier(self)) {
            send(.nosub(id: id, error: refusal))
            return
        }
        guard let handler = server.publicationHandler(name) else {
            send(.nosub(id: id, error: MeteorError(error: .number(404), reason: "Subscription '\(name)' not found")))
            return
        }
        let context = PublicationContext(params: params, userID: userID, subscriptionID: id, session: self)
        subscriptions[id] = SubscriptionRecord(id: id, name: name, params: params, context: context)
        do {
            let cursors = try handler(context)
            guard subscriptions[id] != nil else { return } // the handler ended it
            subscriptions[id]!.cursors = cursors
            if !cursors.isEmpty {
                publishCursors(cursors, for: id, server: server)
                markReady(id)
            } else {
                warnIfNeverReady(id, name: name, server: server)
            }
        } catch {
            stopSubscription(id, error: Self.clientSafe(error))
        }
    }

    /// A handler that returned no cursor publishes by hand and must call `ready()`; one that forgot leaves its
    /// subscriber waiting without a word, so the server says so once, a second later.
    private func warnIfNeverReady(_ id: String, name: String, server: DDPTestServer) {
        let delay = server.readyWarningDelay
        server.queue.asyncAfter(deadline: DispatchTime.now() + Self.interval(delay)) { [weak self] in
            guard let self, !self.ended, let record = self.subscriptions[id], !record.ready else { return }
            server.logger.warning(
                """
                publication '\(name)' returned no cursor and has not called ready() after \(delay): its subscriber \
                waits; return cursors, or call context.ready() when done
                """,
                metadata: ["subscription": "\(id)"])
        }
    }

    private func publishCursors(_ cursors: [Cursor], for subscription: String, server: DDPTestServer) {
        for cursor in cursors {
            for (id, fields) in server.collection(cursor.collection).find(cursor.filter) {
                publish(.added(collection: cursor.collection, id: id, fields: fields), by: subscription)
            }
        }
    }

    /// Routes a subscription's document message through the merge box.
    func publish(_ message: ServerMessage, by subscription: String) {
        let outgoing: ServerMessage?
        switch message {
        case .added(let collection, let id, let fields):
            outgoing = mergeBox.added(by: subscription, collection: collection, id: id, fields: fields)
        case .changed(let collection, let id, let fields, let cleared):
            outgoing = mergeBox.changed(
                by: subscription, collection: collection, id: id, fields: fields, cleared: cleared)
        case .removed(let collection, let id):
            outgoing = mergeBox.removed(by: subscription, collection: collection, id: id)
        default:
            outgoing = nil
        }
        if let outgoing { sendData(outgoing) }
    }

    func markReady(_ id: String) {
        guard subscriptions[id]?.ready == false else { return }
        subscriptions[id]!.ready = true
        sendData(.ready(subscriptionIDs: [id]))
    }

    /// Ends a subscription: its documents leave the merge box, then `nosub` (with the error, if any).
    func stopSubscription(_ id: String, error: MeteorError?) {
        guard let record = subscriptions.removeValue(forKey: id) else {
            send(.nosub(id: id, error: error))
            return
        }
        for (collection, document) in mergeBox.documents(of: id) {
            publish(.removed(collection: collection, id: document), by: id)
        }
        for handler in record.context.stopHandlers { handler() }
        sendData(.nosub(id: id, error: error))
    }

    func stopAllSubscriptions() {
        for (_, record) in subscriptions { for handler in record.context.stopHandlers { handler() } }
        subscriptions.removeAll()
    }

    /// A server collection changed: cursor publications follow it.
    func collectionChanged(collection: String, id: String, before: EJSONObject?, after: EJSONObject?) {
        for (subscription, record) in subscriptions {
            for cursor in record.cursors where cursor.collection == collection {
                let wasIn = before.map { cursor.filter(id, $0) } ?? false
                let isIn = after.map { cursor.filter(id, $0) } ?? false
                switch (wasIn, isIn) {
                case (false, true):
                    publish(.added(collection: collection, id: id, fields: after!), by: subscription)
                case (true, true):
                    let (set, cleared) = Self.difference(from: before!, to: after!)
                    if !set.isEmpty || !cleared.isEmpty {
                        publish(
                            .changed(collection: collection, id: id, fields: set, cleared: cleared), by: subscription)
                    }
                case (true, false):
                    publish(.removed(collection: collection, id: id), by: subscription)
                case (false, false):
                    break
                }
            }
        }
        if collection == "users", id == userID, after != nil {
            startUniversalPublications()
        }
    }

    /// After a login or logout: every publication runs again for the new user; the differences go out, then a fresh
    /// `ready` for each subscription (as Meteor's server does).
    func rerunPublications() {
        guard let server else { return }
        updateUserPublication()
        for (id, record) in subscriptions {
            guard let handler = server.publicationHandler(record.name) else { continue }
            let context = PublicationContext(params: record.params, userID: userID, subscriptionID: id, session: self)
            for stop in record.context.stopHandlers { stop() }
            let previous = Set(mergeBox.documents(of: id).map { "\($0.collection)\u{0}\($0.id)" })
            subscriptions[id]!.context = context
            subscriptions[id]!.ready = false
            do {
                let cursors = try handler(context)
                subscriptions[id]?.cursors = cursors
                var current = Set<String>()
                for cursor in cursors {
                    for (documentID, fields) in server.collection(cursor.collection).find(cursor.filter) {
                        current.insert("\(cursor.collection)\u{0}\(documentID)")
                        if let published = mergeBox.fields(of: id, collection: cursor.collection, id: documentID) {
                            let (set, cleared) = Self.difference(from: published, to: fields)
                            if !set.isEmpty || !cleared.isEmpty {
                                publish(
                                    .changed(
                                        collection: cursor.collection, id: documentID, fields: set, cleared: cleared),
                                    by: id)
                            }
                        } else {
                            publish(.added(collection: cursor.collection, id: documentID, fields: fields), by: id)
                        }
                    }
                }
                for key in previous.subtracting(current) {
                    let parts = key.split(separator: "\u{0}", maxSplits: 1).map(String.init)
                    publish(.removed(collection: parts[0], id: parts[1]), by: id)
                }
                if !cursors.isEmpty { markReady(id) }
            } catch {
                stopSubscription(id, error: Self.clientSafe(error))
            }
        }
    }

    func startUniversalPublications() {
        updateUserPublication()
    }

    /// The logged-in user's own document (username, emails, profile), as Meteor's universal publication sends it.
    private func updateUserPublication() {
        guard let server else { return }
        for (collection, id) in mergeBox.documents(of: userPublicationID) where id != userID {
            publish(.removed(collection: collection, id: id), by: userPublicationID)
        }
        guard let userID, let user = server.collection("users").document(userID) else { return }
        var fields = EJSONObject()
        for name in ["username", "emails", "profile"] { if let value = user[name] { fields[name] = value } }
        if let published = mergeBox.fields(of: userPublicationID, collection: "users", id: userID) {
            let (set, cleared) = Self.difference(from: published, to: fields)
            if !set.isEmpty || !cleared.isEmpty {
                publish(.changed(collection: "users", id: userID, fields: set, cleared: cleared), by: userPublicationID)
            }
        } else {
            publish(.added(collection: "users", id: userID, fields: fields), by: userPublicationID)
        }
    }

    static func difference(from before: EJSONObject, to after: EJSONObject) -> (set: EJSONObject, cleared: [String]) {
        var set = EJSONObject()
        for (name, value) in after where before[name] != value { set[name] = value }
        let cleared: [String] = before.keys.filter { after[$0] == nil }
        return (set, cleared)
    }

    /// Meteor's `wrapInternalException`: client-safe errors pass through, anything else is 500.
    static func clientSafe(_ error: any Error) -> MeteorError {
        if let error = error as? MeteorError { return error }
        return MeteorError(error: .number(500), reason: "Internal server error")
    }
}
