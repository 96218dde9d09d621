import EJSON
import Foundation

/// A regular expression as selectors use it (`$regex`, regex values, `$in` members), compiled once with
/// `NSRegularExpression` (ICU), whose syntax covers the JavaScript patterns apps write in selectors: classes,
/// quantifiers, anchors, groups, alternation, look-ahead. Where ICU reads a pattern differently from JavaScript the
/// pattern is rewritten first (``icuPattern(_:multiline:)``): `\d \w \b` are ASCII, `\s` is JavaScript's set, `$`
/// without `m` is the end of the string only, `[]` matches nothing and `[^]` anything. Flags: `i`
/// (case-insensitive) and `m` (`^`/`$` at line breaks) change matching; `g`, `u` and `y` do not change whether a
/// string matches.
struct MongoRegularExpression: @unchecked Sendable {
    // @unchecked because NSRegularExpression is immutable and documented as safe to use from many threads.

    let pattern: String
    let flags: String
    private let expression: NSRegularExpression

    init(pattern: String, flags: String) throws(QueryError) {
        var options: NSRegularExpression.Options = []
        if flags.contains("i") { options.insert(.caseInsensitive) }
        if flags.contains("m") { options.insert(.anchorsMatchLines) }
        do {
            // ICU refuses an empty pattern; JavaScript's matches everywhere, as this empty group does.
            expression = try NSRegularExpression(
                pattern: pattern.isEmpty ? "(?:)" : Self.icuPattern(pattern, multiline: flags.contains("m")),
                options: options)
        } catch {
            throw QueryError("Invalid regular expression: /\(pattern)/: \(error.localizedDescription)")
        }
        self.pattern = pattern
        self.flags = EJSONValue.normalizedRegularExpressionFlags(flags)
    }

    /// minimongo's `regexpElementMatcher`: a string that contains a match, or the same regular expression.
    func matches(_ value: EJSONValue?) -> Bool {
        switch value {
        case .string(let text)?:
            return expression.firstMatch(in: text, range: NSRange(location: 0, length: text.utf16.count)) != nil
        case .regularExpression(let otherPattern, let otherFlags)?:
            return otherPattern == pattern && EJSONValue.normalizedRegularExpressionFlags(otherFlags) == flags
        default:
            return false
        }
    }

    // MARK: - JavaScript's reading of a pattern

    private static let word = "A-Za-z0-9_"
    private static let space =
        #"\t\n\x{0B}\f\r\x{20}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}"#

    /// `pattern` (JavaScript's syntax) rewritten so that ICU matches what JavaScript matches: the class escapes
    /// `\d \D \w \W \s \S` as JavaScript defines them (ASCII digits and word characters, its whitespace set), `\b`
    /// and `\B` on ASCII word characters (`\b` in a class is a backspace), `$` outside a class at the very end of
    /// the string unless `multiline` (ICU's also matches before a final line break), `[]` and `[^]`. Everything else
    /// is kept as written.
    static func icuPattern(_ pattern: String, multiline: Bool) -> String {
        var result = ""
        var inClass = false
        var characters = Array(pattern.unicodeScalars)[...]
        while let character = characters.popFirst() {
            if character == "\\", let escaped = characters.popFirst() {
                switch (escaped, inClass) {
                case ("d", false): result += "[0-9]"
                case ("d", true): result += "0-9"
                case ("D", _): result += "[^0-9]"
                case ("w", false): result += "[\(word)]"
                case ("w", true): result += word
                case ("W", _): result += "[^\(word)]"
                case ("s", false): result += "[\(space)]"
                case ("s", true): result += space
                case ("S", _): result += "[^\(space)]"
                case ("b", false): result += "(?:(?<=[\(word)])(?![\(word)])|(?<![\(word)])(?=[\(word)]))"
                case ("B", false): result += "(?:(?<=[\(word)])(?=[\(word)])|(?<![\(word)])(?![\(word)]))"
                case ("b", true): result += "\\x{08}"
                default:
                    result.unicodeScalars.append(character)
                    result.unicodeScalars.append(escaped)
                }
                continue
            }
            if inClass {
                if character == "]" { inClass = false }
                // ICU reads `[` inside a class as a nested set; JavaScript as the character.
                if character == "[" { result += "\\[" } else { result.unicodeScalars.append(character) }
                continue
            }
            switch character {
            case "[":
                if characters.first == "]" {
                    characters.removeFirst()
                    result += "(?!)"
                } else if characters.starts(with: ["^", "]"]) {
                    characters.removeFirst(2)
                    result += "[\\s\\S]"
                } else {
                    inClass = true
                    result += "["
                    if characters.first == "^" {
                        result += "^"
                        characters.removeFirst()
                    }
                    // A `]` first in a class closes it in JavaScript (`[]`, handled above); ICU would take it
                    // literally.
                }
            case "$" where !multiline:
                result += "(?![\\s\\S])"
            default:
                result.unicodeScalars.append(character)
            }
        }
        return result
    }
}
