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
    /// Which case sorts first among strings that differ only by case (strength 3): `.upper`, `.lower`, `.off` (the
    /// locale's default, as minimongo reads MongoDB's `"off"`), or `.false` (neither, whatever the locale's default:
    /// `Intl.Collator`'s `"false"`, which minimongo passes on).
    public var caseFirst: CaseFirst?
    /// Digits compare as numbers: `"item2"` before `"item10"`.
    public var numericOrdering: Bool?

    /// MongoDB's `caseFirst`, and `Intl.Collator`'s `"false"`.
    public enum CaseFirst: String, Sendable, Hashable, Codable {
        /// Upper case first (`"A" < "a"`).
        case upper
        /// Lower case first (`"a" < "A"`).
        case lower
        /// The locale's default (Danish: upper first; most others: lower first). minimongo leaves MongoDB's `"off"`
        /// out of its `Intl.Collator` options.
        case off
        /// No case first, overriding the locale's default (ICU's `UCOL_OFF`: Danish sorts `"a"` before `"A"`).
        case `false`
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
    ///   `collation.strength must be an integer between 1 and 5`, or `Intl.Collator`'s for an unknown `caseFirst`.
    ///   minimongo checks the first three in development builds only; this client always does (a query's answer does
    ///   not depend on how the app was built).
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
        default: throw Self.strengthOutOfRange
        }
        if let value = object["caseLevel"], value != .null { caseLevel = value.isTruthy }
        if let value = object["numericOrdering"], value != .null { numericOrdering = value.isTruthy }
        // minimongo leaves "off" out and hands anything else to `Intl.Collator` (which reads `false` as "false").
        switch object["caseFirst"] {
        case nil, .null?: break
        case .bool(false)?: caseFirst = .false
        case .string(let name)?:
            guard let value = CaseFirst(rawValue: name) else {
                throw QueryError("Value \(name) out of range for Intl.Collator options property caseFirst")
            }
            caseFirst = value
        case let value?:
            throw QueryError(
                "Value \(EJSON.stringify(value)) out of range for Intl.Collator options property caseFirst")
        }
    }

    /// minimongo's refusal of a strength outside 1–5 (a document's, and a `Collation` made in Swift, at its collator).
    static let strengthOutOfRange = QueryError("collation.strength must be an integer between 1 and 5")

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

    /// Why `Intl.Collator` refuses `locale`, in V8's words, or `nil`. A BCP 47 tag is a language of 2-3 or 5-8
    /// letters, an optional script (4 letters), region (2 letters or 3 digits) and variants (5-8 letters and digits,
    /// or a digit and 3 more), then extensions (a singleton and its subtags: `-u-` keywords, `-t-` a language and
    /// fields, others 2-8 letters and digits) and private use (`x` and subtags of 1-8). V8 answers "Incorrect locale
    /// information provided" when the part before the first singleton is malformed (`"en_US"`, `"root"`, `"x-foo"`,
    /// `"en-US-US"`), and "Invalid language tag" for the rest: a repeated variant or singleton, a malformed extension,
    /// a trailing `-` (`"de-1996-1996"`, `"en-u"`, `"en-u-a1"`, `"en-"`).
    var localeRefusal: String? {
        let incorrect = "Incorrect locale information provided"
        let invalid = "Invalid language tag: \(String(locale.map { $0.isASCII ? Character($0.lowercased()) : $0 }))"
        let subtags = locale.split(separator: "-", omittingEmptySubsequences: false)
        let firstSingleton = subtags.firstIndex { $0.count == 1 } ?? subtags.endIndex
        var base = subtags[..<firstSingleton]
        let endsWithHyphen = firstSingleton == subtags.endIndex && base.count > 1 && base.last!.isEmpty
        if endsWithHyphen { base = base.dropLast() }
        guard let variants = Self.variantsOfWellFormedBase(base) else { return incorrect }
        guard Set(variants.map { $0.lowercased() }).count == variants.count, !endsWithHyphen else { return invalid }
        var singletons: Set<String> = []
        var index = firstSingleton
        while index < subtags.count {
            let singleton = subtags[index].lowercased()
            guard Self.isAlphanumeric(subtags[index], 1...1) else { return invalid }
            let rest = subtags[(index + 1)...]
            if singleton == "x" {
                return !rest.isEmpty && rest.allSatisfy({ Self.isAlphanumeric($0, 1...8) }) ? nil : invalid
            }
            guard singletons.insert(singleton).inserted else { return invalid }
            let body = rest.prefix { $0.count != 1 }
            let wellFormed =
                switch singleton {
                case "u": Self.isUnicodeExtension(body)
                case "t": Self.isTransformedExtension(body)
                default: !body.isEmpty && body.allSatisfy { Self.isAlphanumeric($0, 2...8) }
                }
            guard wellFormed else { return invalid }
            index += 1 + body.count
        }
        return nil
    }

    private static func isAlphanumeric(_ subtag: Substring, _ lengths: ClosedRange<Int>) -> Bool {
        lengths.contains(subtag.count) && subtag.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
    }

    private static func isAlpha(_ subtag: Substring, _ lengths: ClosedRange<Int>) -> Bool {
        lengths.contains(subtag.count) && subtag.allSatisfy { $0.isASCII && $0.isLetter }
    }

    /// The variants of a language, script, region and variants in that order, or `nil` when `subtags` are not that.
    private static func variantsOfWellFormedBase(_ subtags: ArraySlice<Substring>) -> ArraySlice<Substring>? {
        guard let language = subtags.first, isAlpha(language, 2...3) || isAlpha(language, 5...8) else { return nil }
        var index = subtags.startIndex + 1
        if index < subtags.endIndex, isAlpha(subtags[index], 4...4) { index += 1 }
        if index < subtags.endIndex, isRegion(subtags[index]) { index += 1 }
        let variants = subtags[index...].prefix(while: isVariant)
        return index + variants.count == subtags.endIndex ? variants : nil
    }

    private static func isRegion(_ subtag: Substring) -> Bool {
        isAlpha(subtag, 2...2) || (subtag.count == 3 && subtag.allSatisfy { $0.isASCII && $0.isNumber })
    }

    private static func isVariant(_ subtag: Substring) -> Bool {
        isAlphanumeric(subtag, 5...8) || (isAlphanumeric(subtag, 4...4) && subtag.first!.isNumber)
    }

    /// `-u-`: attributes (3-8 letters and digits), then keywords: a key (a letter or digit, then a letter) and its
    /// type's subtags (3-8).
    private static func isUnicodeExtension(_ body: ArraySlice<Substring>) -> Bool {
        guard !body.isEmpty else { return false }
        var rest = body.drop { isAlphanumeric($0, 3...8) }
        while let key = rest.first {
            guard isAlphanumeric(key, 2...2), key.last!.isLetter else { return false }
            rest = rest.dropFirst().drop { isAlphanumeric($0, 3...8) }
        }
        return true
    }

    /// `-t-`: an optional language (as a tag's own, without extensions), then fields: a key (a letter, then a digit)
    /// and at least one value subtag (3-8).
    private static func isTransformedExtension(_ body: ArraySlice<Substring>) -> Bool {
        guard !body.isEmpty else { return false }
        func isFieldKey(_ subtag: Substring) -> Bool {
            subtag.count == 2 && isAlpha(subtag.prefix(1), 1...1) && subtag.last!.isASCII && subtag.last!.isNumber
        }
        let languageLength = body.prefix { !isFieldKey($0) }.count
        if languageLength > 0, variantsOfWellFormedBase(body.prefix(languageLength)) == nil { return false }
        var rest = body.dropFirst(languageLength)
        while let key = rest.first {
            guard isFieldKey(key) else { return false }
            let values = rest.dropFirst().prefix { isAlphanumeric($0, 3...8) }
            guard !values.isEmpty else { return false }
            rest = rest.dropFirst(1 + values.count)
        }
        return true
    }
}
