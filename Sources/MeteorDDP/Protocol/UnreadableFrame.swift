import EJSON

/// Who waits on a frame that does not parse: the method or subscription ids it names, read from it as plain JSON
/// (no EJSON type recognised) when its EJSON or its fields cannot be read.
///
/// Meteor's client logs such a frame and drops it, so the call or subscription waiting for it waits forever. This
/// client fails the waiter instead (``MethodError/Kind/protocolViolation``, ``SubscriptionError/violation``), and
/// takes an `updated` whose readable ids it can read as the server's word for those ids: no waiter hangs on input the
/// client cannot read.
enum UnreadableFrame: Sendable, Hashable {
    /// A `result` for this method id.
    case result(methodID: String)
    /// An `updated` for these method ids (its string elements).
    case updated(methodIDs: [String])
    /// A `ready` for these subscription ids (its string elements).
    case ready(subscriptionIDs: [String])
    /// A `nosub` for this subscription id.
    case nosub(subscriptionID: String)

    /// What `frame` names, if it is a `result`, `updated`, `ready` or `nosub` whose ids can be read; otherwise `nil`.
    /// Only frames that failed to parse come here, so the second reading costs nothing on the normal path.
    init?(frame: String) {
        guard case .object(let object)? = try? EJSON.parseJSON(frame), case .string(let msg)? = object["msg"] else {
            return nil
        }
        func strings(_ field: String) -> [String] {
            guard case .array(let elements)? = object[field] else { return [] }
            return elements.compactMap(\.stringValue)
        }
        switch msg {
        case "result":
            guard case .string(let id)? = object["id"] else { return nil }
            self = .result(methodID: id)
        case "nosub":
            guard case .string(let id)? = object["id"] else { return nil }
            self = .nosub(subscriptionID: id)
        case "updated":
            let ids = strings("methods")
            guard !ids.isEmpty else { return nil }
            self = .updated(methodIDs: ids)
        case "ready":
            let ids = strings("subs")
            guard !ids.isEmpty else { return nil }
            self = .ready(subscriptionIDs: ids)
        default:
            return nil
        }
    }
}
