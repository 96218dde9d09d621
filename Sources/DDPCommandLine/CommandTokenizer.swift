import EJSON

/// Splits a command line into words as a shell does (single and double quotes, backslash escapes), except that a
/// JSON object or array (a word starting with `{` or `[`) is kept exactly as typed, its double quotes and spaces
/// included, up to its closing bracket; and reads arguments as EJSON where they parse (`1`, `true`, `{"a":1}`,
/// `"text"`), else as plain strings. An argument that starts like a JSON object or array but does not parse is
/// refused ( ``argument(_:)`` throws), never taken as a string: a typo must not quietly select nothing.
public enum CommandTokenizer {
    public struct UnterminatedQuote: Error, CustomStringConvertible {
        public var description: String { "unterminated quote" }
    }

    /// An argument that looks like JSON (it starts with `{` or `[`) but does not parse.
    public struct InvalidJSONArgument: Error, CustomStringConvertible {
        public let argument: String
        public let reason: String
        public var description: String {
            "not valid JSON: \(argument) (\(reason)); quote it ('…') to pass it as a string"
        }
    }

    public static func words(_ line: String) throws -> [String] {
        var words: [String] = []
        var current = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        var characters = line[...]
        while let character = characters.popFirst() {
            if escaped {
                current.append(character)
                escaped = false
                continue
            }
            if let open = quote {
                if character == "\\", open == "\"" {
                    escaped = true
                } else if character == open {
                    quote = nil
                } else {
                    current.append(character)
                }
                continue
            }
            if !inWord, character == "{" || character == "[" {
                current = String(character) + takeJSON(from: &characters, opening: character)
                inWord = true
                continue
            }
            if character == "\\" {
                escaped = true
                inWord = true
            } else if character == "'" || character == "\"" {
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

    /// The rest of a JSON object or array whose opening bracket was just read, as typed: up to the bracket that
    /// closes it (strings and their escapes skipped), or to the end of the line if none does.
    private static func takeJSON(from characters: inout Substring, opening: Character) -> String {
        var text = ""
        var depth = 1
        var inString = false
        var escaped = false
        while depth > 0, let character = characters.popFirst() {
            text.append(character)
            if inString {
                if escaped {
                    escaped = false
                } else if character == "\\" {
                    escaped = true
                } else if character == "\"" {
                    inString = false
                }
                continue
            }
            switch character {
            case "\"": inString = true
            case "{", "[": depth += 1
            case "}", "]": depth -= 1
            default: break
            }
        }
        return text
    }

    /// An argument as EJSON: JSON text parses (`42`, `{"a":1}`, `"quoted"`), anything else is a string.
    ///
    /// - Throws: ``InvalidJSONArgument`` for a word that starts with `{` or `[` and does not parse.
    public static func argument(_ word: String) throws -> EJSONValue {
        do {
            return try EJSON.parse(word)
        } catch {
            if let first = word.first, first == "{" || first == "[" {
                throw InvalidJSONArgument(argument: word, reason: "\(error)")
            }
            return .string(word)
        }
    }
}
