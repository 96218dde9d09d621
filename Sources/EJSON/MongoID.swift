/// Meteor's `MongoID.idStringify` / `idParse`: how document ids travel in `added`/`changed`/`removed` messages.
///
/// Plain string ids travel as they are; strings that could be mistaken for another kind are prefixed with `-`,
/// 24-hex-digit strings too (they would read as ObjectIDs), and non-string ids travel as `~` + their EJSON.
public enum MongoID {
    /// The wire form of an id.
    public static func stringify(_ id: EJSONValue) -> String {
        switch id {
        case .string(let text):
            guard let first = text.first else { return "" }
            if first == "-" || first == "~" || first == "{" || ObjectID.isHex24(text) { return "-" + text }
            return text
        case .custom(type: "oid", value: .string(let hex)):
            return hex
        default:
            return "~" + EJSON.stringify(id)
        }
    }

    /// The id a wire form stands for (`nil` for `"-"`, Meteor's `undefined`).
    public static func parse(_ text: String) -> EJSONValue? {
        guard let first = text.first else { return .string("") }
        switch first {
        case "-":
            let rest = String(text.dropFirst())
            return rest.isEmpty ? nil : .string(rest)
        case "~":
            return try? EJSON.parse(String(text.dropFirst()))
        default:
            return ObjectID.isHex24(text) ? .custom(type: "oid", value: .string(text)) : .string(text)
        }
    }

    /// Whether `value` can be a document's `_id` as a selector names it (minimongo's `_selectorIsId`: a string, a
    /// number or an ObjectID).
    public static func isID(_ value: EJSONValue) -> Bool {
        switch value {
        case .string, .number, .custom(type: "oid", _): return true
        default: return false
        }
    }

    /// The `_id` a document brings for itself, if it is one an id can be (``isID(_:)``); `nil` for none, `null` or
    /// anything else (the collection then makes one).
    public static func givenID(of document: EJSONObject) -> EJSONValue? {
        document["_id"].flatMap { isID($0) ? $0 : nil }
    }

    /// The id a selector names alone, `"id"` or `{_id: id}` (minimongo's `_selectorIsIdPerhapsAsObject`), or `nil`.
    public static func id(namedBy selector: EJSONValue) -> EJSONValue? {
        if isID(selector) { return selector }
        guard case .object(let object) = selector, object.count == 1, let id = object["_id"], isID(id) else {
            return nil
        }
        return id
    }

    /// The id a document with the `_id` `id` has in the client's cache (`Document.id`): a string id as it is, unless
    /// it would read as another id (24 hex digits, a leading `-` or `~`: then with `-` before it, as on the wire); an
    /// ObjectID's 24 hex digits; `~` + EJSON for other ids. ``parse(_:)`` gives the `_id` back.
    public static func documentID(_ id: EJSONValue) -> String {
        if case .string(let text) = id {
            return parse(text) == id ? text : "-" + text
        }
        return stringify(id)
    }

    /// The cache's id (``documentID(_:)``) of a document whose id travelled as `wireID` (``stringify(_:)``).
    public static func documentID(fromWire wireID: String) -> String {
        guard wireID.utf8.first == UInt8(ascii: "-"), case .string(let text)? = parse(wireID),
            parse(text) == .string(text)
        else {
            return wireID
        }
        return text
    }
}
