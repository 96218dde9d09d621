import EJSON

/// Splits a command line into words as a shell does (single and double quotes, backslash escapes), and reads
/// arguments as EJSON where they parse (`1`, `true`, `{"a":1}`, `"text"`), else as plain strings.
public enum CommandTokenizer {
    public struct UnterminatedQuote: Error, CustomStringConvertible {
        public var description: String { "unterminated quote" }
    }

    public static func words(_ line: String) throws -> [String] {
        var words: [String] = []
        var current = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        for character in line {
            if escaped {
                current.append(character)
                escaped = false
                continue
            }
            if character == "\\", quote != "'" {
                escaped = true
                inWord = true
                continue
            }
            if let open = quote {
                if character == open { quote = nil } else { current.append(character) }
                continue
            }
            if character == "'" || character == "\"" {
                quote = character
                inWord = true
            } else if character.isWhitespace {
                if inWord { words.append(current) }
                current = ""
                inWord = false
            } else {
                current.append(character)
                inWord = true
            }
        }
        if quote != nil { throw UnterminatedQuote() }
        if inWord { words.append(current) }
        return words
    }

    /// An argument as EJSON: JSON text parses (`42`, `{"a":1}`, `"quoted"`), anything else is a string.
    public static func argument(_ word: String) -> EJSONValue {
        (try? EJSON.parse(word)) ?? .string(word)
    }
}
