import EJSON

/// Language-aware string comparison for a query (Meteor 3.5's `collation` option of `find`, `findOne`, `count` and
/// live queries): MongoDB's collation document, honoured as minimongo honours it, through the same ICU collator
/// JavaScript's `Intl.Collator` uses.
///
/// For example, names in the order a German reader expects, whatever their case:
/// ```swift
/// let people = try client.collection("people").find(
///     [:], FindOptions(sort: ["name": 1], collation: Collation(locale: "de", strength: 2)))
/// ```
///
/// What it changes (minimongo's rules): sorting and `$lt`/`$lte`/`$gt`/`$gte` compare strings with it, including
/// strings, object keys and ObjectIDs inside objects and arrays; equality (`{name: "john"}`, `$eq`, `$ne`, `$in`,
/// `$nin`, `$all`) uses it only when both sides are strings; a selector that is an id no longer takes the id fast
/// path (`findOne("abc")` finds `_id: "ABC"` at strength 2). Numbers, dates, booleans and null compare as before.
/// `alternate`, `maxVariable` and `backwards` are not honoured (minimongo ignores them; the server's MongoDB does
/// not), and strengths 4 and 5 compare as 3.
public struct Collation: Sendable, Hashable, Codable {
    /// Which letters are different, from strength 1 (base letters only) to 3 (case too).
    ///
    /// MongoDB's `strength`: 1 ignores case and accents (`"cafe"` equals `"CAFÉ"`), 2 ignores case (`"john"` equals
    /// `"JOHN"`, not `"jöhn"`), 3 (the default) tells them all apart. 4 and 5 compare as 3, as in minimongo.
    public var strength: Int?
    /// A BCP 47 language tag: `"en"`, `"de"`, `"sv"`, `"zh-Hant"` (not MongoDB's `"en_US"`, which JavaScript
    /// refuses too).
    public var locale: String
    /// With strength 1: case is told apart but accents are not (`Intl.Collator`'s `sensitivity: "case"`). Ignored
    /// at other strengths, as in minimongo.
    public var caseLevel: Bool?
    /// Which case sorts first among strings that differ only by case (strength 3): `.upper`, `.lower`, or `.off`
    /// (the locale's default).
    public var caseFirst: CaseFirst?
    /// Digits compare as numbers: `"item2"` before `"item10"`.
    public var numericOrdering: Bool?

    /// MongoDB's `caseFirst`.
    public enum CaseFirst: String, Sendable, Hashable, Codable {
        case upper, lower, off
    }

    /// A collation for `locale`.
    public init(
        locale: String, strength: Int? = nil, caseLevel: Bool? = nil, caseFirst: CaseFirst? = nil,
        numericOrdering: Bool? = nil
    ) {
        self.locale = locale
        self.strength = strength
        self.caseLevel = caseLevel
        self.caseFirst = caseFirst
        self.numericOrdering = numericOrdering
    }

    /// Reads MongoDB's collation document (`{locale: "en", strength: 2}`), as minimongo checks it.
    ///
    /// - Throws: ``QueryError``: `collation must be an object`, `collation.locale must be a non-empty string`,
    ///   `collation.strength must be an integer between 1 and 5`, or an unknown `caseFirst`.
    public init(_ document: EJSONValue) throws(QueryError) {
        guard case .object(let object) = document else { throw QueryError("collation must be an object") }
        guard case .string(let locale)? = object["locale"], !locale.isEmpty else {
            throw QueryError("collation.locale must be a non-empty string")
        }
        self.init(locale: locale)
        switch object["strength"] {
        case nil, .null?: break
        case .number(let value)? where value >= 1 && value <= 5:
            // minimongo takes any number in range; 2.5, like 3, tells everything apart.
            strength = value == 1 || value == 2 ? Int(value) : 3
        default: throw QueryError("collation.strength must be an integer between 1 and 5")
        }
        if let value = object["caseLevel"], value != .null { caseLevel = value.isTruthy }
        if let value = object["numericOrdering"], value != .null { numericOrdering = value.isTruthy }
        switch object["caseFirst"] {
        case nil, .null?: break
        case .string("false")?:
            caseFirst = .off // `Intl.Collator`'s own name for it
        case .string(let name)?:
            guard let value = CaseFirst(rawValue: name) else {
                throw QueryError("Value \(name) out of range for Intl.Collator options property caseFirst")
            }
            caseFirst = value
        default: throw QueryError("collation.caseFirst must be \"upper\", \"lower\" or \"off\"")
        }
    }

    /// What `Intl.Collator` is asked for (minimongo's `_createCollator`).
    var sensitivity: Sensitivity {
        switch strength {
        case 1?: caseLevel == true ? .case : .base
        case 2?: .accent
        default: .variant
        }
    }

    /// `Intl.Collator`'s `sensitivity`.
    enum Sensitivity {
        /// Base letters only (ICU's primary strength).
        case base
        /// Base letters and accents (secondary).
        case accent
        /// Base letters and case (primary with the case level).
        case `case`
        /// Everything (tertiary).
        case variant
    }

    /// Whether `locale` is a well-formed BCP 47 language tag: a language of 2-3 or 5-8 letters, then subtags of 1 to 8
    /// letters and digits, joined by `-`. `Intl.Collator` refuses the rest (`"en_US"`, `"root"`, `"x-foo"`:
    /// "Incorrect locale information provided").
    var hasWellFormedLocale: Bool {
        let subtags = locale.split(separator: "-", omittingEmptySubsequences: false)
        guard let first = subtags.first, [2, 3, 5, 6, 7, 8].contains(first.count),
            first.allSatisfy({ $0.isASCII && $0.isLetter })
        else { return false }
        return subtags.allSatisfy { subtag in
            (1...8).contains(subtag.count) && subtag.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
        }
    }
}
