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
}
