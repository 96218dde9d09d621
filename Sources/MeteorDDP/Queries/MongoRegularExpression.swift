import EJSON
import Foundation

/// A regular expression as selectors use it (`$regex`, regex values, `$in` members), compiled once with
/// `NSRegularExpression` (ICU), whose syntax covers the JavaScript patterns apps write in selectors: classes,
/// quantifiers, anchors, groups, alternation, `\d \w \s \b`, look-ahead. Flags: `i` (case-insensitive) and `m`
/// (`^`/`$` at line breaks) change matching; `g`, `u` and `y` do not change whether a string matches.
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
            expression = try NSRegularExpression(pattern: pattern.isEmpty ? "(?:)" : pattern, options: options)
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
}
