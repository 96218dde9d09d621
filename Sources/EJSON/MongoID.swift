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
            if first == "-" || first == "~" || first == "{" || isHexObjectID(text) { return "-" + text }
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
            return isHexObjectID(text) ? .custom(type: "oid", value: .string(text)) : .string(text)
        }
    }

    private static func isHexObjectID(_ text: String) -> Bool {
        text.utf8.count == 24 && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}
