import EJSON

/// A server frame that is not a valid DDP message: it is reported (logged and surfaced on ``DDPClient/errors``)
/// and skipped; the connection keeps going.
public struct DDPProtocolViolation: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong with the frame.
    public enum Kind: Sendable, Hashable {
        /// The frame is not valid JSON / EJSON; the associated text is the parser's message (with its byte offset).
        case malformedJSON(String)
        /// The frame is a binary WebSocket frame (DDP uses text frames only).
        case binaryFrame(byteCount: Int)
        /// The JSON is not an object.
        case notAnObject
        /// The object has no `msg`.
        case missingMsg
        /// The `msg` names no message this client understands.
        case unknownMessage(String)
        /// A required field is missing.
        case missingField(message: String, field: String)
        /// A field has the wrong type.
        case wrongFieldType(message: String, field: String)
        /// A valid message that makes no sense now (for example `connected` while already connected).
        case unexpected(message: String, reason: String)
    }

    /// What is wrong.
    public let kind: Kind
    /// The start of the offending frame or message (at most 200 characters), for diagnostics.
    public let excerpt: String
    /// The call or subscription ids an unreadable `result`, `updated`, `ready` or `nosub` names (see
    /// ``UnreadableFrame``): their waiters fail instead of waiting forever.
    var unreadable: UnreadableFrame?
    /// A greeting Meteor's client ignores (``MessageReader/isGreeting(_:)``): dropped, not reported.
    var isGreeting = false

    /// Creates a violation for a decoded message.
    public init(_ kind: Kind, message: EJSONValue) {
        self.kind = kind
        self.excerpt = String(EJSON.stringify(message).prefix(200))
    }

    /// Creates a violation for a raw frame.
    public init(_ kind: Kind, frame: String) {
        self.kind = kind
        self.excerpt = String(frame.prefix(200))
    }

    /// Whether the frame is a message with a type (a string `msg`) other than `ping` and `pong`: the server counted it
    /// as sent, so a session the client resumes counts it too.
    var hasMessageType: Bool {
        switch kind {
        case .malformedJSON, .binaryFrame, .notAnObject, .missingMsg: false
        case .unknownMessage(let message), .missingField(let message, _), .wrongFieldType(let message, _),
            .unexpected(let message, _):
            message != "?" && message != "ping" && message != "pong"
        }
    }

    public var description: String {
        let what: String
        switch kind {
        case .malformedJSON(let reason): what = "malformed JSON (\(reason))"
        case .binaryFrame(let count): what = "binary frame of \(count) bytes ignored"
        case .notAnObject: what = "message is not a JSON object"
        case .missingMsg: what = "message has no \"msg\" field"
        case .unknownMessage(let msg): what = "unknown message type \"\(msg)\""
        case .missingField(let msg, let field): what = "\"\(msg)\" message is missing field \"\(field)\""
        case .wrongFieldType(let msg, let field): what = "\"\(msg)\" message has a wrongly typed field \"\(field)\""
        case .unexpected(let msg, let reason): what = "unexpected \"\(msg)\" message: \(reason)"
        }
        return "DDP protocol violation: \(what) in \(excerpt)"
    }
}
