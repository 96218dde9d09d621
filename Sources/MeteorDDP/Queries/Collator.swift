import Foundation

#if canImport(_FoundationICU)
    import _FoundationICU
#endif

/// Compares strings under a ``Collation``: minimongo's `Intl.Collator`, which is ICU's collator. Where the
/// toolchain carries ICU (`_FoundationICU`, Linux) the very same collator is opened with the same attributes, so the
/// order is `Intl.Collator`'s to the letter (`CollationTests` checks it against node's answers); elsewhere (Apple
/// platforms) Foundation's locale-aware comparison, itself ICU's, with the same sensitivity.
///
/// Immutable once made, so shared by every thread (ICU's comparison is thread-safe on a collator nobody changes).
final class Collator: @unchecked Sendable {
    let collation: Collation
    private let backend: Backend

    private enum Backend {
        #if canImport(_FoundationICU)
            case icu(OpaquePointer)
        #endif
        case foundation(FoundationCollator)
    }

    /// A collator for `collation`.
    ///
    /// - Throws: ``QueryError`` for a locale that is not a BCP 47 tag (as `Intl.Collator` throws a `RangeError`), or
    ///   a strength outside 1–5 (as minimongo checks a collation document's).
    convenience init(_ collation: Collation) throws(QueryError) {
        try self.init(collation, usingICU: true)
    }

    /// `usingICU: false` takes Foundation's comparison even where ICU is at hand (tests compare the two).
    init(_ collation: Collation, usingICU: Bool) throws(QueryError) {
        if let refusal = collation.localeRefusal { throw QueryError(refusal) }
        if let strength = collation.strength, !(1...5).contains(strength) { throw Collation.strengthOutOfRange }
        self.collation = collation
        #if canImport(_FoundationICU)
            if usingICU, let collator = Self.openICU(collation) {
                backend = .icu(collator)
                return
            }
        #endif
        backend = .foundation(FoundationCollator(collation))
    }

    deinit {
        #if canImport(_FoundationICU)
            if case .icu(let collator) = backend { swift_ucol_close(collator) }
        #endif
    }

    /// Negative when `a` sorts first, positive when `b` does, zero when they are equal under the collation.
    func compare(_ a: String, _ b: String) -> Int {
        switch backend {
        #if canImport(_FoundationICU)
            case .icu(let collator):
                var (a, b) = (a, b)
                var status = U_ZERO_ERROR
                let result = a.withUTF8 { x in
                    b.withUTF8 { y in
                        x.withMemoryRebound(to: CChar.self) { x in
                            y.withMemoryRebound(to: CChar.self) { y in
                                swift_ucol_strcollUTF8(
                                    collator, x.baseAddress, Int32(x.count), y.baseAddress, Int32(y.count), &status)
                            }
                        }
                    }
                }
                return result == UCOL_LESS ? -1 : result == UCOL_GREATER ? 1 : 0
        #endif
        case .foundation(let collator):
            return collator.compare(a, b)
        }
    }

    #if canImport(_FoundationICU)
        /// minimongo's `_createCollator` in ICU's terms: `Intl.Collator(locale, {sensitivity, numeric, caseFirst})`.
        private static func openICU(_ collation: Collation) -> OpaquePointer? {
            var status = U_ZERO_ERROR
            // Warnings (negative: the locale's data fell back to its parent or the root) are fine, as in JavaScript.
            guard let collator = swift_ucol_open(collation.locale, &status), status.rawValue <= 0 else { return nil }
            func set(_ attribute: UColAttribute, _ value: UColAttributeValue) {
                swift_ucol_setAttribute(collator, attribute, value, &status)
            }
            // V8 turns normalization on ("by the spec"): accents in another order compare equal.
            set(UCOL_NORMALIZATION_MODE, UCOL_ON)
            switch collation.sensitivity {
            case .base: set(UCOL_STRENGTH, UCOL_PRIMARY)
            case .accent: set(UCOL_STRENGTH, UCOL_SECONDARY)
            case .case:
                set(UCOL_STRENGTH, UCOL_PRIMARY)
                set(UCOL_CASE_LEVEL, UCOL_ON)
            case .variant: set(UCOL_STRENGTH, UCOL_TERTIARY)
            }
            if let numeric = collation.numericOrdering { set(UCOL_NUMERIC_COLLATION, numeric ? UCOL_ON : UCOL_OFF) }
            switch collation.caseFirst {
            case .upper?: set(UCOL_CASE_FIRST, UCOL_UPPER_FIRST)
            case .lower?: set(UCOL_CASE_FIRST, UCOL_LOWER_FIRST)
            case .false?: set(UCOL_CASE_FIRST, UCOL_OFF)
            case .off?, nil: break
            }
            guard status.rawValue <= 0 else {
                swift_ucol_close(collator)
                return nil
            }
            return collator
        }
    #endif
}

/// The collation in Foundation's terms: `compare(_:options:range:locale:)` with the sensitivity as options (case-
/// and diacritic-insensitive), `.numeric` for numeric ordering, and a `caseFirst` other than the locale's own as the
/// case-swapped comparison of strings that differ only by case.
struct FoundationCollator: Sendable {
    let locale: Locale
    let options: String.CompareOptions
    /// The locale puts the other case first: ties of a case-blind comparison compare with their cases swapped.
    let swapsCase: Bool

    init(_ collation: Collation) {
        locale = Locale(identifier: collation.locale)
        var options: String.CompareOptions = []
        switch collation.sensitivity {
        case .base: options = [.caseInsensitive, .diacriticInsensitive]
        case .accent: options = [.caseInsensitive]
        case .case: options = [.diacriticInsensitive]
        case .variant: break
        }
        if collation.numericOrdering == true { options.insert(.numeric) }
        self.options = options
        let upperFirst: Bool? =
            switch collation.caseFirst {
            case .upper?: true
            case .lower?, .false?: false
            case .off?, nil: nil
            }
        guard let upperFirst, !options.contains(.caseInsensitive) else {
            swapsCase = false
            return
        }
        let localeIsUpperFirst = "A".compare("a", options: options, range: nil, locale: locale) == .orderedAscending
        swapsCase = upperFirst != localeIsUpperFirst
    }

    func compare(_ a: String, _ b: String) -> Int {
        func order(_ x: String, _ y: String, _ options: String.CompareOptions) -> Int {
            switch x.compare(y, options: options, range: nil, locale: locale) {
            case .orderedAscending: -1
            case .orderedDescending: 1
            case .orderedSame: 0
            }
        }
        guard swapsCase else { return order(a, b, options) }
        let caseBlind = order(a, b, options.union(.caseInsensitive))
        if caseBlind != 0 { return caseBlind }
        return order(Self.swappingCase(a), Self.swappingCase(b), options)
    }

    /// `text` with each letter that has exactly one letter of the other case, mapping back to it, in that case
    /// (`ß`, `ς` and `ﬀ` stay: swapping them would make different strings the same).
    private static func swappingCase(_ text: String) -> String {
        var result = ""
        for character in text {
            let swapped =
                character.isUppercase ? character.lowercased() : character.isLowercase ? character.uppercased() : ""
            let back = swapped.first.map { $0.isUppercase ? $0.lowercased() : $0.uppercased() }
            if swapped.count == 1, back == String(character) {
                result += swapped
            } else {
                result.append(character)
            }
        }
        return result
    }
}
