import EJSON

/// A message the client sends to the server, one per WebSocket text frame (ddp-semantics §2).
///
/// ``ejsonValue`` writes the fields in the order Meteor's client writes them, so frames match Meteor's byte for byte.
/// For example:
/// ```swift
/// let frame = EJSON.stringify(ClientMessage.sub(id: "a1", name: "todos", params: ["listA"]).ejsonValue)
/// // {"msg":"sub","id":"a1","name":"todos","params":["listA"]}
/// ```
public enum ClientMessage: Sendable, Hashable {
    /// Opens a DDP session, proposing `version` and listing every supported version. On a new socket, `session` and
    /// `receivedCount` (the messages received in it, pings and pongs aside) ask a Meteor 3.5+ server to resume that
    /// session (ddp-semantics §13).
    case connect(session: String?, receivedCount: Int? = nil, version: DDPVersion, support: [DDPVersion])
    /// A heartbeat ping; Meteor's client sends none with an id.
    case ping(id: String?)
    /// The answer to a server ping, echoing its id.
    case pong(id: String?)
    /// Starts a subscription.
    case sub(id: String, name: String, params: [EJSONValue])
    /// Stops a subscription.
    case unsub(id: String)
    /// Invokes a method; `randomSeed` is present only when the stub used randomness.
    case method(id: String, method: String, params: [EJSONValue], randomSeed: String?)
    /// Says the client ends its session on purpose (Meteor 3.5+): the server ends it when the socket closes, with no
    /// grace period to resume it in.
    case disconnect

    /// The `msg` field.
    public var name: String {
        switch self {
        case .connect: return "connect"
        case .ping: return "ping"
        case .pong: return "pong"
        case .sub: return "sub"
        case .unsub: return "unsub"
        case .method: return "method"
        case .disconnect: return "disconnect"
        }
    }

    /// The message as an EJSON object with Meteor's field order.
    public var ejsonValue: EJSONValue {
        var o = EJSONObject(minimumCapacity: 6)
        o["msg"] = .string(name)
        switch self {
        case .connect(let session, let receivedCount, let version, let support):
            if let session { o["session"] = .string(session) }
            if let receivedCount { o["receivedCount"] = .number(Double(receivedCount)) }
            o["version"] = .string(version.rawValue)
            o["support"] = .array(support.map { .string($0.rawValue) })
        case .ping(let id), .pong(let id):
            if let id { o["id"] = .string(id) }
        case .sub(let id, let name, let params):
            o["id"] = .string(id)
            o["name"] = .string(name)
            o["params"] = .array(params)
        case .unsub(let id):
            o["id"] = .string(id)
        case .method(let id, let method, let params, let randomSeed):
            o["id"] = .string(id)
            o["method"] = .string(method)
            o["params"] = .array(params)
            if let randomSeed { o["randomSeed"] = .string(randomSeed) }
        case .disconnect:
            break
        }
        return .object(o)
    }

    /// Reads a client message (used by the test server and by tests inspecting sent frames).
    ///
    /// - Throws: ``DDPProtocolViolation`` when the object is not a well-formed client message.
    public init(ejson value: EJSONValue) throws(DDPProtocolViolation) {
        let reader = try MessageReader(value)
        switch reader.msg {
        case "connect":
            let support = try reader.optionalArray("support")?.compactMap {
                $0.stringValue.map(DDPVersion.init(rawValue:))
            }
            // Only an integer is a count (Meteor's server compares it strictly): anything else asks for no resume.
            let count = reader.object["receivedCount"]?.doubleValue.flatMap { Int(exactly: $0) }
            self = .connect(
                session: try reader.optionalString("session"),
                receivedCount: count,
                version: DDPVersion(rawValue: try reader.string("version")),
                support: support ?? []
            )
        case "ping": self = .ping(id: try reader.optionalString("id"))
        case "pong": self = .pong(id: try reader.optionalString("id"))
        case "sub":
            self = .sub(
                id: try reader.string("id"), name: try reader.string("name"),
                params: try reader.optionalArray("params") ?? [])
        case "unsub": self = .unsub(id: try reader.string("id"))
        case "disconnect": self = .disconnect
        case "method":
            self = .method(
                id: try reader.string("id"),
                method: try reader.string("method"),
                params: try reader.optionalArray("params") ?? [],
                randomSeed: try reader.optionalString("randomSeed")
            )
        default:
            throw DDPProtocolViolation(.unknownMessage(reader.msg), message: value)
        }
    }
}
