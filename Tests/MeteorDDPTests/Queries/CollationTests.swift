import EJSON
import XCTest

@testable import MeteorDDP

#if canImport(_FoundationICU)
    import _FoundationICU
#endif

/// Meteor 3.5's `collation` (minimongo through `Intl.Collator`): the collator's order is JavaScript's, and queries use
/// it where minimongo does.
final class CollationTests: XCTestCase {
    private let words = [
        "b", "B", "a", "A", "á", "Á", "ä", "item10", "item2", "Résumé", "resume", "resumé", "z", "ø", "o", "Ö", "å",
        "ch", "cz", "h", "ll", "l", "m", " a", "-a", "a-b", "ab"
    ]

    /// Node 20 (ICU 78): `[...words].sort(new Intl.Collator(locale, options).compare).join("|")`.
    private let javaScriptOrders: [(Collation, String)] = [
        (
            Collation(locale: "en"),
            " a|-a|a|A|á|Á|å|ä|a-b|ab|b|B|ch|cz|h|item10|item2|l|ll|m|o|Ö|ø|resume|resumé|Résumé|z"
        ),
        (
            Collation(locale: "sv"),
            " a|-a|a|A|á|Á|a-b|ab|b|B|ch|cz|h|item10|item2|l|ll|m|o|resume|resumé|Résumé|z|å|ä|Ö|ø"
        ),
        (
            Collation(locale: "en", caseFirst: .upper),
            " a|-a|A|a|Á|á|å|ä|a-b|ab|B|b|ch|cz|h|item10|item2|l|ll|m|o|Ö|ø|resume|resumé|Résumé|z"
        ),
        (
            Collation(locale: "en", numericOrdering: true),
            " a|-a|a|A|á|Á|å|ä|a-b|ab|b|B|ch|cz|h|item2|item10|l|ll|m|o|Ö|ø|resume|resumé|Résumé|z"
        ),
        (
            Collation(locale: "cs"),
            " a|-a|a|A|á|Á|å|ä|a-b|ab|b|B|cz|h|ch|item10|item2|l|ll|m|o|Ö|ø|resume|resumé|Résumé|z"
        ),
        (
            Collation(locale: "en", strength: 1),
            " a|-a|a|A|á|Á|ä|å|a-b|ab|b|B|ch|cz|h|item10|item2|l|ll|m|ø|o|Ö|Résumé|resume|resumé|z"
        ),
        (
            Collation(locale: "en", strength: 2),
            " a|-a|a|A|á|Á|å|ä|a-b|ab|b|B|ch|cz|h|item10|item2|l|ll|m|o|Ö|ø|resume|resumé|Résumé|z"
        ),
        (
            Collation(locale: "en", strength: 1, caseLevel: true),
            " a|-a|a|á|ä|å|A|Á|a-b|ab|b|B|ch|cz|h|item10|item2|l|ll|m|ø|o|Ö|resume|resumé|Résumé|z"
        ),
        // Danish puts upper case first by default: `.off` keeps it (minimongo leaves MongoDB's "off" out), "lower" and
        // "false" override it.
        (
            Collation(locale: "da"),
            " a|-a|A|a|Á|á|a-b|ab|B|b|ch|cz|h|item10|item2|l|ll|m|o|resume|resumé|Résumé|z|ä|ø|Ö|å"
        ),
        (
            Collation(locale: "da", caseFirst: .off),
            " a|-a|A|a|Á|á|a-b|ab|B|b|ch|cz|h|item10|item2|l|ll|m|o|resume|resumé|Résumé|z|ä|ø|Ö|å"
        ),
        (
            Collation(locale: "da", caseFirst: .lower),
            " a|-a|a|A|á|Á|a-b|ab|b|B|ch|cz|h|item10|item2|l|ll|m|o|resume|resumé|Résumé|z|ä|ø|Ö|å"
        ),
        (
            Collation(locale: "da", caseFirst: .false),
            " a|-a|a|A|á|Á|a-b|ab|b|B|ch|cz|h|item10|item2|l|ll|m|o|resume|resumé|Résumé|z|ä|ø|Ö|å"
        ),
        (
            Collation(locale: "de", strength: 2, numericOrdering: true),
            " a|-a|a|A|á|Á|å|ä|a-b|ab|b|B|ch|cz|h|item2|item10|l|ll|m|o|Ö|ø|resume|resumé|Résumé|z"
        )
    ]

    /// A stable sort of `words` by `collator` (words it finds equal keep their order, as in JavaScript).
    private func sorted(_ collator: Collator) -> String {
        words.enumerated().sorted { x, y in
            let order = collator.compare(x.element, y.element)
            return order != 0 ? order < 0 : x.offset < y.offset
        }.map(\.element).joined(separator: "|")
    }

    func testTheCollatorSortsAsJavaScriptsIntlCollator() throws {
        for (collation, expected) in javaScriptOrders {
            XCTAssertEqual(sorted(try Collator(collation)), expected, "\(collation)")
        }
        // Accents in another order are the same letter: V8 normalizes (node: `compare("a\u0302\u0323", "ậ")` is 0).
        XCTAssertEqual(try Collator(Collation(locale: "en", strength: 2)).compare("a\u{302}\u{323}", "\u{1EAD}"), 0)
    }

    func testStrengthAndCaseLevelDecideWhatIsEqual() throws {
        func equal(_ a: String, _ b: String, _ collation: Collation) throws -> Bool {
            try Collator(collation).compare(a, b) == 0
        }
        XCTAssertTrue(try equal("abc", "ÁBC", Collation(locale: "en", strength: 1)))
        XCTAssertTrue(try equal("abc", "ABC", Collation(locale: "en", strength: 2)))
        XCTAssertFalse(try equal("abc", "ábc", Collation(locale: "en", strength: 2)))
        XCTAssertFalse(try equal("a", "A", Collation(locale: "en", strength: 1, caseLevel: true)))
        XCTAssertTrue(try equal("a", "á", Collation(locale: "en", strength: 1, caseLevel: true)))
        XCTAssertTrue(
            try equal("a", "A", Collation(locale: "en", strength: 2, caseLevel: true)), "caseLevel only at strength 1")
        XCTAssertFalse(try equal("a", "A", Collation(locale: "en", strength: 3)))
        XCTAssertFalse(try equal("a", "A", Collation(locale: "en", strength: 5)), "4 and 5 compare as 3")
        XCTAssertLessThan(try Collator(Collation(locale: "en", caseFirst: .upper)).compare("A", "a"), 0)
        XCTAssertGreaterThan(try Collator(Collation(locale: "en", caseFirst: .lower)).compare("A", "a"), 0)
        // Danish's default is upper first, so lower-first and "false" are seen to take effect.
        XCTAssertLessThan(try Collator(Collation(locale: "da")).compare("A", "a"), 0)
        XCTAssertGreaterThan(try Collator(Collation(locale: "da", caseFirst: .lower)).compare("A", "a"), 0)
        XCTAssertGreaterThan(try Collator(Collation(locale: "da", caseFirst: .false)).compare("A", "a"), 0)
        #if canImport(_FoundationICU)
            // "false" is ICU's no-case-first, not lower first (node: compare("A", "ª"), ("Σ", "ς"), ("aa", "Å")).
            let lower = try Collator(Collation(locale: "da", caseFirst: .lower))
            let none = try Collator(Collation(locale: "da", caseFirst: .false))
            XCTAssertEqual([lower.compare("A", "ª"), lower.compare("Σ", "ς"), lower.compare("aa", "Å")], [1, 1, -1])
            XCTAssertEqual([none.compare("A", "ª"), none.compare("Σ", "ς"), none.compare("aa", "Å")], [-1, -1, 1])
        #endif
        XCTAssertEqual(try Collation(["locale": "da", "caseFirst": "false"]).caseFirst, .false)
        XCTAssertEqual(try Collation(["locale": "da", "caseFirst": "off"]).caseFirst, .off)
        XCTAssertEqual(try Collation(["locale": "da", "caseFirst": false]).caseFirst, .false, "JavaScript's \"false\"")
        XCTAssertThrowsError(try Collation(["locale": "da", "caseFirst": true])) {
            XCTAssertEqual(
                ($0 as? QueryError)?.message, "Value true out of range for Intl.Collator options property caseFirst")
        }
    }

    /// Foundation's comparison (Apple platforms) puts the other case first by swapping case on ties, never making two
    /// different strings the same: `ß`, `ς` and `ﬀ` have no one-letter other case (node: each compares non-zero).
    func testFoundationsCaseSwapKeepsDifferentStringsApart() throws {
        for collation in [Collation(locale: "da", caseFirst: .lower), Collation(locale: "en", caseFirst: .upper)] {
            let collator = try Collator(collation, usingICU: false)
            for (a, b) in [("ß", "ss"), ("σ", "ς"), ("ﬀ", "ff")] {
                XCTAssertNotEqual(collator.compare(a, b), 0, "\(a) \(b) \(collation)")
            }
        }
    }

    /// A locale ICU has no collation data for falls back to the root order (the README's difference: JavaScript
    /// falls back to the device's locale), whatever the process's own locale: ICU's default is Swedish meanwhile.
    func testALocaleWithoutDataComparesInTheRootOrder() throws {
        #if canImport(_FoundationICU)
            var status = U_ZERO_ERROR
            let previous = String(cString: swift_uloc_getDefault())
            swift_uloc_setDefault("sv", &status)
            defer { swift_uloc_setDefault(previous, &status) }
            XCTAssertEqual(String(cString: swift_uloc_getDefault()), "sv")
        #endif
        let root = try sorted(Collator(Collation(locale: "en")))
        for locale in ["tlh", "xx-YY", "und"] { XCTAssertEqual(try sorted(Collator(Collation(locale: locale))), root) }
        XCTAssertNotEqual(try sorted(Collator(Collation(locale: "sv"))), root, "a locale with data keeps its order")
    }

    /// Apple platforms compare through Foundation (its locale-aware comparison): on Linux both exist, and
    /// Foundation's gives JavaScript's order for every collation here.
    func testFoundationsComparisonSortsAsJavaScriptToo() throws {
        for (collation, expected) in javaScriptOrders {
            XCTAssertEqual(sorted(try Collator(collation, usingICU: false)), expected, "\(collation)")
        }
    }

    func testACollationDocumentIsCheckedAsMinimongoChecksIt() {
        func message(_ document: EJSONValue) -> String? {
            do {
                _ = try Collator(Collation(document))
                return nil
            } catch {
                return error.message
            }
        }
        XCTAssertEqual(message("en"), "collation must be an object")
        XCTAssertEqual(message(["strength": 2]), "collation.locale must be a non-empty string")
        XCTAssertEqual(message(["locale": ""]), "collation.locale must be a non-empty string")
        XCTAssertEqual(
            message(["locale": "en", "strength": 0]), "collation.strength must be an integer between 1 and 5")
        XCTAssertEqual(
            message(["locale": "en", "strength": 6]), "collation.strength must be an integer between 1 and 5")
        XCTAssertEqual(
            message(["locale": "en", "caseFirst": "bogus"]),
            "Value bogus out of range for Intl.Collator options property caseFirst")
        // Node 20's answers (`new Intl.Collator(locale)`).
        let incorrect = [
            "en_US", "e", "root", "x-foo", "i-klingon", "en-US-US", "en-abc", "en-abcdefghi", "abcd", "en--US",
            "en-Latn-Latn", "en-1996-US", "en-1ab", "zh-min-nan", "en--", "en-fonipa-fonipa-kn", "en-1994-1994-abc",
            "\u{212A}a", "en-\u{212A}a"
        ]
        for locale in incorrect {
            XCTAssertEqual(message(["locale": .string(locale)]), "Incorrect locale information provided", locale)
        }
        let invalid = [
            "en-u", "en-a-b", "de-1996-1996", "en-x", "en-u-ca-buddhist-u-co-x", "en-a-bb-a-cc", "en-u-kn-x-abcdefghi",
            "en-", "en-u-co-", "en-u-a1", "en-u-k1", "en-u-m0-abc", "en-u-abc-k1", "en-t-1a", "en-t-1996", "en-t-t0",
            "en-t-t0-ab", "en-t-en-m0", "en-u-co-abcdefghi"
        ]
        for locale in invalid {
            XCTAssertEqual(message(["locale": .string(locale)]), "Invalid language tag: \(locale)")
        }
        // V8 names the tag in lower case.
        for (locale, named) in [
            ("EN-u", "en-u"), ("en-US-", "en-us-"), ("en-t-Latn-abc", "en-t-latn-abc"),
            ("en-US-t-1996", "en-us-t-1996"), ("EN-FONIPA-FONIPA", "en-fonipa-fonipa")
        ] {
            XCTAssertEqual(message(["locale": .string(locale)]), "Invalid language tag: \(named)")
        }
        let wellFormed = [
            "en-x-y", "en-Latn-US", "en-US-u-co-phonebk", "de-1996", "sl-rozaj-biske-1994", "es-419", "en-u-kn",
            "tlh", "en-u-ca", "en-US-1996", "en-4190", "EN", "en-A1b2c", "en-1abc", "en-t-de", "en-t-en",
            "en-t-en-m0-abc", "en-t-m0-abc-def", "en-u-abc", "en-u-abc-co-phonebk", "en-u-ab", "en-t-en-US-1996",
            "en-u-co-phonebk-ca-gregory-abc", "de-DE-u-co-phonebk"
        ]
        for locale in wellFormed { XCTAssertNil(message(["locale": .string(locale)]), locale) }
        XCTAssertNil(message(["locale": "es-419", "caseFirst": "false"]), "Intl.Collator's name for off")
        XCTAssertNil(message(["locale": "zh-Hant-TW", "strength": 2, "numericOrdering": true, "caseFirst": "off"]))
        XCTAssertEqual(
            try Collation(["locale": "de", "strength": 1, "caseLevel": true]),
            Collation(locale: "de", strength: 1, caseLevel: true))
        for strength in [0, 7] {
            XCTAssertThrowsError(try Collator(Collation(locale: "en", strength: strength)), "made in Swift") {
                XCTAssertEqual(($0 as? QueryError)?.message, "collation.strength must be an integer between 1 and 5")
            }
        }
    }

    // MARK: - Queries (minimongo_tests.js's collation cases)

    private func matches(_ selector: EJSONValue, _ document: EJSONObject, strength: Int) throws -> Bool {
        try MongoSelector(selector, collator: Collator(Collation(locale: "en", strength: strength))).matches(document)
    }

    func testEqualityUsesTheCollatorOnlyBetweenTwoStrings() throws {
        XCTAssertTrue(try matches(["name": "john"], ["name": "JOHN"], strength: 2))
        XCTAssertTrue(try matches(["name": "john"], ["name": ["Ann", "John"]], strength: 2), "array elements too")
        XCTAssertFalse(try matches(["name": "cafe"], ["name": "café"], strength: 2))
        XCTAssertTrue(try matches(["name": "cafe"], ["name": "CAFÉ"], strength: 1))
        XCTAssertTrue(try matches(["name": ["$eq": "john"]], ["name": "JOHN"], strength: 2))
        XCTAssertFalse(try matches(["name": ["$ne": "john"]], ["name": "JOHN"], strength: 2))
        XCTAssertTrue(try matches(["name": ["$in": ["john", "jane"]]], ["name": "Jane"], strength: 2))
        XCTAssertFalse(try matches(["name": ["$in": ["john", "jane"]]], ["name": "bob"], strength: 2))
        XCTAssertFalse(try matches(["name": ["$nin": ["john", "jane"]]], ["name": "JOHN"], strength: 2))
        XCTAssertTrue(try matches(["tags": ["$all": ["a", "b"]]], ["tags": ["B", "A"]], strength: 2))
        XCTAssertFalse(
            try matches(["p": ["n": "john"]], ["p": ["n": "JOHN"]], strength: 2), "a string inside an object: EJSON")
        XCTAssertFalse(try matches(["age": ["$gt": 30]], ["age": 20], strength: 2), "numbers as before")
        XCTAssertFalse(try matches(["name": "john"], ["name": "JOHN"], strength: 3))
    }

    func testInequalitiesCompareWithTheCollator() throws {
        XCTAssertTrue(try matches(["name": ["$gt": "a"]], ["name": "B"], strength: 2))
        XCTAssertFalse(try matches(["name": ["$gt": "b"]], ["name": "A"], strength: 2))
        XCTAssertTrue(try matches(["name": ["$lt": "B"]], ["name": "a"], strength: 2), "code units: a > B")
        XCTAssertTrue(try matches(["name": ["$gte": "john"]], ["name": "JOHN"], strength: 2), "code units: J < j")
        XCTAssertTrue(try matches(["name": ["$lte": "JOHN"]], ["name": "john"], strength: 2))
        XCTAssertFalse(try matches(["name": ["$gte": "john"]], ["name": "alice"], strength: 2))
        XCTAssertTrue(
            try matches(["p": ["$lte": ["n": "JOHN"]]], ["p": ["n": "john"]], strength: 2), "ordering goes deep")
        XCTAssertFalse(
            try MongoSelector(["p": ["$lte": ["n": "JOHN"]]]).matches(["p": ["n": "john"]]), "code units: j > J")
        XCTAssertFalse(try matches(["name": ["$gt": "B"]], ["name": "a"], strength: 3))
    }

    private func people(_ names: [String]) -> LocalCollection {
        let database = Database()
        for (index, name) in names.enumerated() {
            database.apply(
                .added(DocumentKey(collectionName: "people", documentID: "p\(index)"), ["name": .string(name)]))
        }
        return database.collection("people")
    }

    func testFindSortsAndCountsUnderTheCollation() throws {
        let people = people(["Alice", "bob", "CHARLIE", "alice"])
        let strength2 = Collation(locale: "en", strength: 2)
        let sorted = try people.find([:], FindOptions(sort: ["name": 1], collation: strength2))
        XCTAssertEqual(sorted.map { $0["name"] }, ["Alice", "alice", "bob", "CHARLIE"], "ties keep their arrival")
        XCTAssertEqual(
            try people.find([:], FindOptions(sort: ["name": 1])).map { $0["name"] },
            ["Alice", "CHARLIE", "alice", "bob"])
        XCTAssertEqual(try people.count(["name": "ALICE"], FindOptions(collation: strength2)), 2)
        XCTAssertEqual(try people.count(["name": "ALICE"], FindOptions(limit: 1, collation: strength2)), 1)
        XCTAssertEqual(try people.count(["name": "ALICE"]), 0)
        XCTAssertEqual(
            try people.findOne(["name": "BOB"], FindOptions(collation: strength2))?.id, "p1")
    }

    func testAnIDSelectorLeavesTheFastPathUnderACollation() throws {
        let database = Database()
        database.apply(.added(DocumentKey(collectionName: "c", documentID: "ABC"), ["v": 1]))
        database.apply(.added(DocumentKey(collectionName: "c", documentID: MongoID.documentID(0)), ["v": 0]))
        let c = database.collection("c")
        let strength2 = FindOptions(collation: Collation(locale: "en", strength: 2))
        XCTAssertEqual(try c.findOne("abc", strength2)?.id, "ABC")
        XCTAssertNil(try c.findOne("abc"))
        XCTAssertEqual(try c.find(["_id": 0]).count, 1, "the fast path")
        XCTAssertEqual(try c.find(["_id": 0], strength2).count, 0, "the matcher: a falsy _id matches nothing")
        XCTAssertEqual(try c.find(0, strength2).count, 1)
    }

    /// Under a collation an id selector is a matcher like any other, so `skip` and `limit` apply to what it finds.
    func testAnIDSelectorsWindowUnderACollationIsTheMatchersWindow() throws {
        let database = Database()
        for id in ["ABC", "abc", "x"] { database.apply(.added(DocumentKey(collectionName: "c", documentID: id), [:])) }
        let c = database.collection("c")
        let collation = Collation(locale: "en", strength: 2)
        XCTAssertEqual(try c.find("abc", FindOptions(collation: collation)).map(\.id), ["ABC", "abc"])
        XCTAssertEqual(try c.find("abc", FindOptions(skip: 1, collation: collation)).map(\.id), ["abc"])
        XCTAssertEqual(try c.find("abc", FindOptions(limit: 1, collation: collation)).map(\.id), ["ABC"])
        XCTAssertEqual(try c.find("abc", FindOptions(skip: 1)).map(\.id), [], "without one: the fast path's window")
    }

    /// A selector set on a query is read as `find` reads one: under the query's collation, and an id selector with
    /// the fast path's window; one set in place of an id selector drops that window.
    func testASelectorSetOnAQueryIsReadAsFindReadsIt() throws {
        let database = Database()
        for (id, name) in [("a", "Alice"), ("b", "Bob"), ("c", "Carol")] {
            database.apply(.added(DocumentKey(collectionName: "c", documentID: id), ["name": .string(name)]))
        }
        let c = database.collection("c")
        var query = try Query(["_id": "a"], FindOptions(limit: 2))
        query.selector = try MongoSelector([:])
        XCTAssertEqual(c.find(query).map(\.id), ["a", "b"], "the limit applies again")
        query.skip = 1
        XCTAssertEqual(c.find(query).map(\.id), ["b", "c"])
        query.selector = try MongoSelector("b")
        XCTAssertEqual(c.find(query).map(\.id), [], "an id selector's window: skip 1 leaves nothing, as find's")
        query.selector = try MongoSelector(["_id": "b"])
        XCTAssertEqual(query.selector?.selector, ["_id": "b"], "the selector as given")
        var collated = try Query([:], FindOptions(collation: Collation(locale: "en", strength: 2)))
        collated.selector = try MongoSelector(["name": "BOB"])
        XCTAssertEqual(c.find(collated).map(\.id), ["b"], "compared under the query's collation")
        collated.selector = try MongoSelector("B")
        XCTAssertEqual(c.find(collated).map(\.id), ["b"], "an id under the collation is matched, not looked up")
        collated.selector = nil
        XCTAssertEqual(c.find(collated).count, 3)
    }

    func testNumericOrderingSortsDigitsAsNumbers() throws {
        let database = Database()
        for (index, value) in ["20", "10", "2"].enumerated() {
            database.apply(.added(DocumentKey(collectionName: "c", documentID: "\(index)"), ["val": .string(value)]))
        }
        let sorted = try database.collection("c").find(
            [:], FindOptions(sort: ["val": 1], collation: Collation(locale: "en", numericOrdering: true)))
        XCTAssertEqual(sorted.map { $0["val"] }, ["2", "10", "20"])
    }

    func testALiveQueryKeepsItsCollatedOrderAsDocumentsChange() throws {
        let database = Database()
        let key = { (id: String) in DocumentKey(collectionName: "people", documentID: id) }
        database.apply(.added(key("1"), ["name": "bob"]))
        database.apply(.added(key("2"), ["name": "Alice"]))
        let live = try database.collection("people").observe(
            ["name": ["$gte": "b"]],
            FindOptions(sort: ["name": -1], collation: Collation(locale: "en", strength: 2)))
        defer { live.stop() }
        database.waitUntilDelivered()
        XCTAssertEqual(live.documents.map(\.id), ["1"])
        database.apply(.added(key("3"), ["name": "Carl"]))
        database.apply(.added(key("4"), ["name": "BOBBY"]))
        database.waitUntilDelivered()
        XCTAssertEqual(live.documents.map(\.id), ["3", "4", "1"])
        database.apply(.changed(key("3"), ["name": "aaron"], cleared: []))
        database.waitUntilDelivered()
        XCTAssertEqual(live.documents.map(\.id), ["4", "1"])
    }
}
