import EJSON

/// Typed field access for decoding DDP messages, throwing ``DDPProtocolViolation`` with the message kept for the
/// report.
struct MessageReader {
    let value: EJSONValue
    let object: EJSONObject
    let msg: String

    init(_ value: EJSONValue) throws(DDPProtocolViolation) {
        guard case .object(let object) = value else { throw DDPProtocolViolation(.notAnObject, message: value) }
        guard let msg = object["msg"] else {
            var violation = DDPProtocolViolation(.missingMsg, message: value)
            violation.isGreeting = Self.isGreeting(object)
            throw violation
        }
        guard case .string(let name) = msg else {
            throw DDPProtocolViolation(.wrongFieldType(message: "?", field: "msg"), message: value)
        }
        self.value = value
        self.object = object
        self.msg = name
    }

    /// A frame without `msg` that Meteor's client drops without a word (connection_stream_handlers.js `onMessage`):
    /// the `{"server_id": "0"}` welcome servers before Meteor 2.3 send on every new socket (exactly one key, a truthy
    /// `server_id`), and the `{"testMessageOnConnect": true}` of a server run by `meteor test`.
    static func isGreeting(_ object: EJSONObject) -> Bool {
        if object["testMessageOnConnect"]?.isTruthy == true { return true }
        return object.count == 1 && object["server_id"]?.isTruthy == true
    }

    func string(_ field: String) throws(DDPProtocolViolation) -> String {
        guard let v = object[field] else {
            throw DDPProtocolViolation(.missingField(message: msg, field: field), message: value)
        }
        guard case .string(let s) = v else {
            throw DDPProtocolViolation(.wrongFieldType(message: msg, field: field), message: value)
        }
        return s
    }

    func optionalString(_ field: String) throws(DDPProtocolViolation) -> String? {
        switch object[field] {
        case nil, .null?: return nil
        case .string(let s)?: return s
        default: throw DDPProtocolViolation(.wrongFieldType(message: msg, field: field), message: value)
        }
    }

    func optionalArray(_ field: String) throws(DDPProtocolViolation) -> [EJSONValue]? {
        switch object[field] {
        case nil, .null?: return nil
        case .array(let a)?: return a
        default: throw DDPProtocolViolation(.wrongFieldType(message: msg, field: field), message: value)
        }
    }

    func optionalObject(_ field: String) throws(DDPProtocolViolation) -> EJSONObject? {
        switch object[field] {
        case nil, .null?: return nil
        case .object(let o)?: return o
        default: throw DDPProtocolViolation(.wrongFieldType(message: msg, field: field), message: value)
        }
    }

    func stringArray(_ field: String) throws(DDPProtocolViolation) -> [String] {
        guard let array = try optionalArray(field) else {
            throw DDPProtocolViolation(.missingField(message: msg, field: field), message: value)
        }
        var strings: [String] = []
        strings.reserveCapacity(array.count)
        for element in array {
            guard case .string(let s) = element else {
                throw DDPProtocolViolation(.wrongFieldType(message: msg, field: field), message: value)
            }
            strings.append(s)
        }
        return strings
    }

    func optionalValue(_ field: String) -> EJSONValue? {
        object[field]
    }
}
