/// Why a text could not be read as EJSON, with the byte offset where reading stopped.
///
/// For example:
/// ```swift
/// do { _ = try EJSON.parse(#"{"a":"#) }
/// catch let error as EJSONError { print(error) } // "unexpected end of input at byte 5"
/// ```
public struct EJSONError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: Sendable, Hashable {
        /// The input ended in the middle of a value.
        case unexpectedEndOfInput
        /// A byte that cannot start or continue a value here.
        case unexpectedCharacter(UInt8)
        /// Something other than white space after the value.
        case trailingCharacters
        /// Bytes that are not valid UTF-8.
        case invalidUTF8
        /// A string escape that is not valid (for example `\x`, or a lone surrogate like `\ud800`).
        case invalidEscape
        /// An unescaped control character inside a string.
        case controlCharacterInString
        /// A number outside the range of a double (for example `1e400`).
        case numberOutOfRange
        /// Arrays and objects nested deeper than ``EJSON/maximumNestingDepth``.
        case nestingTooDeep
        /// An EJSON object with a wrong payload (for example `{"$binary": 5}` or `{"$date": "x"}`).
        case invalidEJSONValue(String)
        /// `{"$type": name, "$value": …}` for a name that is not registered in ``EJSONTypeRegistry``.
        case unknownCustomType(String)
    }

    /// What went wrong.
    public let kind: Kind
    /// The byte offset in the input where reading stopped.
    public let offset: Int

    /// Creates an error.
    public init(_ kind: Kind, at offset: Int) {
        self.kind = kind
        self.offset = offset
    }

    public var description: String {
        let what: String
        switch kind {
        case .unexpectedEndOfInput: what = "unexpected end of input"
        case .unexpectedCharacter(let byte):
            what =
                byte >= 0x20 && byte < 0x7F
                ? "unexpected character '\(Character(Unicode.Scalar(byte)))'"
                : "unexpected byte 0x\(String(byte, radix: 16))"
        case .trailingCharacters: what = "unexpected characters after the value"
        case .invalidUTF8: what = "invalid UTF-8"
        case .invalidEscape: what = "invalid escape sequence"
        case .controlCharacterInString: what = "unescaped control character in a string"
        case .numberOutOfRange: what = "number out of range"
        case .nestingTooDeep: what = "nesting deeper than \(EJSON.maximumNestingDepth) levels"
        case .invalidEJSONValue(let reason): what = "invalid EJSON value: \(reason)"
        case .unknownCustomType(let name): what = "Custom EJSON type \(name) is not defined"
        }
        return "\(what) at byte \(offset)"
    }
}
