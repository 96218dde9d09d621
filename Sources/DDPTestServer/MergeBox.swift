import EJSON
import MeteorDDP

/// One session's view of the documents its subscriptions publish (Meteor's `SessionCollectionView` /
/// `SessionDocumentView`): a document is added once however many subscriptions publish it, each field shows the
/// value of the first subscription that set it, and a document is removed only when no subscription has it.
///
/// Confined to the server queue.
struct MergeBox {
    struct DocumentView {
        /// Subscriptions that publish the document.
        var publishers: Set<String> = []
        /// For each field, the subscriptions that set it with their values; the first one is visible.
        var fieldsBySubscription: [String: [(subscription: String, value: EJSONValue)]] = [:]
        /// Field order as first published.
        var fieldOrder: [String] = []

        var visibleFields: EJSONObject {
            var fields = EJSONObject()
            for name in fieldOrder { if let first = fieldsBySubscription[name]?.first { fields[name] = first.value } }
            return fields
        }
    }

    private(set) var documents: [String: [String: DocumentView]] = [:]

    /// A subscription publishes a document (or more fields of it). Returns the message to send, if any.
    mutating func added(by subscription: String, collection: String, id: String, fields: EJSONObject) -> ServerMessage?
    {
        var view = documents[collection]?[id] ?? DocumentView()
        let isNew = view.publishers.isEmpty
        view.publishers.insert(subscription)
        var changed = EJSONObject()
        for (name, value) in fields {
            if let visible = set(&view, subscription: subscription, field: name, value: value) {
                changed[name] = visible
            }
        }
        documents[collection, default: [:]][id] = view
        if isNew { return .added(collection: collection, id: id, fields: view.visibleFields) }
        return changed.isEmpty ? nil : .changed(collection: collection, id: id, fields: changed, cleared: [])
    }

    /// A subscription changed fields of a document it publishes.
    mutating func changed(
        by subscription: String, collection: String, id: String, fields: EJSONObject, cleared: [String]
    ) -> ServerMessage? {
        guard var view = documents[collection]?[id], view.publishers.contains(subscription) else { return nil }
        var setFields = EJSONObject()
        var clearedFields: [String] = []
        for (name, value) in fields {
            if let visible = set(&view, subscription: subscription, field: name, value: value) {
                setFields[name] = visible
            }
        }
        clear(cleared, in: &view, subscription: subscription, set: &setFields, cleared: &clearedFields)
        documents[collection]![id] = view
        guard !setFields.isEmpty || !clearedFields.isEmpty else { return nil }
        return .changed(collection: collection, id: id, fields: setFields, cleared: clearedFields)
    }

    /// A subscription no longer publishes a document.
    mutating func removed(by subscription: String, collection: String, id: String) -> ServerMessage? {
        guard var view = documents[collection]?[id], view.publishers.contains(subscription) else { return nil }
        view.publishers.remove(subscription)
        if view.publishers.isEmpty {
            documents[collection]!.removeValue(forKey: id)
            return .removed(collection: collection, id: id)
        }
        var setFields = EJSONObject()
        var clearedFields: [String] = []
        clear(view.fieldOrder, in: &view, subscription: subscription, set: &setFields, cleared: &clearedFields)
        documents[collection]![id] = view
        guard !setFields.isEmpty || !clearedFields.isEmpty else { return nil }
        return .changed(collection: collection, id: id, fields: setFields, cleared: clearedFields)
    }

    /// The fields a subscription currently publishes for a document (nil if it does not publish it).
    func fields(of subscription: String, collection: String, id: String) -> EJSONObject? {
        guard let view = documents[collection]?[id], view.publishers.contains(subscription) else { return nil }
        var fields = EJSONObject()
        for name in view.fieldOrder {
            if let entry = view.fieldsBySubscription[name]?.first(where: { $0.subscription == subscription }) {
                fields[name] = entry.value
            }
        }
        return fields
    }

    /// Documents a subscription publishes.
    func documents(of subscription: String) -> [(collection: String, id: String)] {
        documents.flatMap { collection, views in
            views.filter { $0.value.publishers.contains(subscription) }.map { (collection, $0.key) }
        }
    }

    /// Sets a field for a subscription; returns the new visible value if it changed.
    private func set(_ view: inout DocumentView, subscription: String, field: String, value: EJSONValue) -> EJSONValue?
    {
        var entries = view.fieldsBySubscription[field] ?? []
        if entries.isEmpty { view.fieldOrder.append(field) }
        if let index = entries.firstIndex(where: { $0.subscription == subscription }) {
            let old = entries[index].value
            entries[index].value = value
            view.fieldsBySubscription[field] = entries
            return index == 0 && old != value ? .some(value) : .none
        }
        entries.append((subscription, value))
        view.fieldsBySubscription[field] = entries
        return entries.count == 1 ? .some(value) : .none
    }

    /// Clears fields for a subscription, collecting what becomes visible (another subscription's value) or goes away.
    private func clear(
        _ names: [String], in view: inout DocumentView, subscription: String, set: inout EJSONObject,
        cleared: inout [String]
    ) {
        for name in names {
            switch clear(&view, subscription: subscription, field: name) {
            case .none: break
            case .some(nil): cleared.append(name)
            case .some(let value?): set[name] = value
            }
        }
    }

    /// Clears a field for a subscription: `.none` if nothing visible changed, `.some(nil)` if the field is gone,
    /// `.some(value)` if another subscription's value is visible now.
    private func clear(_ view: inout DocumentView, subscription: String, field: String) -> EJSONValue?? {
        guard var entries = view.fieldsBySubscription[field],
            let index = entries.firstIndex(where: { $0.subscription == subscription })
        else { return .none }
        let removed = entries.remove(at: index)
        if entries.isEmpty {
            view.fieldsBySubscription.removeValue(forKey: field)
            view.fieldOrder.removeAll { $0 == field }
            return .some(nil)
        }
        view.fieldsBySubscription[field] = entries
        guard index == 0, entries[0].value != removed.value else { return .none }
        return .some(entries[0].value)
    }
}
