import EJSON

/// A message the server sends to the client (ddp-semantics §3).
///
/// For example:
/// ```swift
/// let message = try ServerMessage(ejson: EJSON.parse(#"{"msg":"ready","subs":["a1"]}"#))
/// // .ready(subscriptionIDs: ["a1"])
/// ```
public enum ServerMessage: Sendable, Hashable {
    /// The session is open.
    case connected(session: String)
    /// The server does not speak the proposed version and names the one it wants.
    case failed(version: String)
    /// A server heartbeat ping, to be answered with a pong carrying the same id.
    case ping(id: String?)
    /// The answer to a client ping.
    case pong(id: String?)
    /// A document was added to a collection.
    case added(collection: String, id: String, fields: EJSONObject)
    /// Fields of a document changed; `cleared` lists fields that were removed.
    case changed(collection: String, id: String, fields: EJSONObject, cleared: [String])
    /// A document was removed.
    case removed(collection: String, id: String)
    /// Subscriptions became ready.
    case ready(subscriptionIDs: [String])
    /// A subscription ended, with an error if it failed.
    case nosub(id: String, error: MeteorError?)
    /// The result of a method: a value (absent when the method returned `undefined`) or an error.
    case result(id: String, result: EJSONValue?, error: MeteorError?)
    /// All data written by these methods has been sent.
    case updated(methodIDs: [String])
    /// The server could not handle a message of ours.
    case error(reason: String, offendingMessage: EJSONValue?)

    /// The `msg` field.
    public var name: String {
        switch self {
        case .connected: return "connected"
        case .failed: return "failed"
        case .ping: return "ping"
        case .pong: return "pong"
        case .added: return "added"
        case .changed: return "changed"
        case .removed: return "removed"
        case .ready: return "ready"
        case .nosub: return "nosub"
        case .result: return "result"
        case .updated: return "updated"
        case .error: return "error"
        }
    }

    /// Whether this is a data message subject to buffering and quiescence (added/changed/removed/ready/updated/nosub).
    public var isDataMessage: Bool {
        switch self {
        case .added, .changed, .removed, .ready, .nosub, .updated: return true
        case .connected, .failed, .ping, .pong, .result, .error: return false
        }
    }

    /// Reads a server message.
    ///
    /// - Throws: ``DDPProtocolViolation`` for a non-object, a missing or unknown `msg`, or a missing or mistyped field.
    public init(ejson value: EJSONValue) throws(DDPProtocolViolation) {
        let reader = try MessageReader(value)
        switch reader.msg {
        case "connected": self = .connected(session: try reader.string("session"))
        case "failed": self = .failed(version: try reader.string("version"))
        case "ping": self = .ping(id: try reader.optionalString("id"))
        case "pong": self = .pong(id: try reader.optionalString("id"))
        case "added":
            self = .added(
                collection: try reader.string("collection"), id: try reader.string("id"),
                fields: try reader.optionalObject("fields") ?? [:])
        case "changed":
            let cleared = try reader.optionalArray("cleared") ?? []
            var names: [String] = []
            names.reserveCapacity(cleared.count)
            for field in cleared {
                guard case .string(let s) = field else {
                    throw DDPProtocolViolation(.wrongFieldType(message: "changed", field: "cleared"), message: value)
                }
                names.append(s)
            }
            self = .changed(
                collection: try reader.string("collection"),
                id: try reader.string("id"),
                fields: try reader.optionalObject("fields") ?? [:],
                cleared: names
            )
        case "removed": self = .removed(collection: try reader.string("collection"), id: try reader.string("id"))
        case "ready": self = .ready(subscriptionIDs: try reader.stringArray("subs"))
        case "nosub":
            self = .nosub(
                id: try reader.string("id"), error: reader.optionalValue("error").map(MeteorError.init(ejson:)))
        case "result":
            self = .result(
                id: try reader.string("id"), result: reader.optionalValue("result"),
                error: reader.optionalValue("error").map(MeteorError.init(ejson:)))
        case "updated": self = .updated(methodIDs: try reader.stringArray("methods"))
        case "error":
            self = .error(
                reason: try reader.optionalString("reason") ?? "",
                offendingMessage: reader.optionalValue("offendingMessage"))
        default: throw DDPProtocolViolation(.unknownMessage(reader.msg), message: value)
        }
    }

    /// The message as an EJSON object with the field order of Meteor's server.
    public var ejsonValue: EJSONValue {
        var o = EJSONObject(minimumCapacity: 5)
        o["msg"] = .string(name)
        switch self {
        case .connected(let session): o["session"] = .string(session)
        case .failed(let version): o["version"] = .string(version)
        case .ping(let id), .pong(let id):
            if let id { o["id"] = .string(id) }
        case .added(let collection, let id, let fields):
            o["collection"] = .string(collection)
            o["id"] = .string(id)
            o["fields"] = .object(fields)
        case .changed(let collection, let id, let fields, let cleared):
            o["collection"] = .string(collection)
            o["id"] = .string(id)
            if !fields.isEmpty { o["fields"] = .object(fields) }
            if !cleared.isEmpty { o["cleared"] = .array(cleared.map { .string($0) }) }
        case .removed(let collection, let id):
            o["collection"] = .string(collection)
            o["id"] = .string(id)
        case .ready(let subs): o["subs"] = .array(subs.map { .string($0) })
        case .nosub(let id, let error):
            o["id"] = .string(id)
            if let error { o["error"] = error.ejsonValue }
        case .result(let id, let result, let error):
            o["id"] = .string(id)
            if let error {
                o["error"] = error.ejsonValue
            } else if let result {
                o["result"] = result
            }
        case .updated(let methods): o["methods"] = .array(methods.map { .string($0) })
        case .error(let reason, let offending):
            o["reason"] = .string(reason)
            if let offending { o["offendingMessage"] = offending }
        }
        return .object(o)
    }
}
