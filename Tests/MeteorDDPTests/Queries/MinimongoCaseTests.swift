import EJSON
import Foundation
import XCTest

@testable import MeteorDDP

/// Runs minimongo's own test cases through our queries, modifiers, projections, sorts and collations and reports how
/// many give minimongo's answer.
///
/// The cases are `Fixtures/minimongo_cases.json`, generated from Meteor's `packages/minimongo` test files by
/// `Tests/MinimongoCaseExtractor/extract-minimongo-cases.mjs` (the command is in docs/ARCHITECTURE.md, "Queries");
/// `MINIMONGO_CASES=path` runs another file. Every failing case must fall under one of the differences the README
/// lists (``documentedDifference(_:why:)``); the report goes to standard output (`MINIMONGO_REPORT=path` also writes
/// every failure to a file).
final class MinimongoCaseTests: XCTestCase {
    private struct Outcome {
        var passed = 0
        var failed: [(case: EJSONObject, why: String)] = []
        var notApplicable = 0
        var skipped = 0
    }

    func testMinimongosOwnCases() throws {
        let path =
            try ProcessInfo.processInfo.environment["MINIMONGO_CASES"]
            ?? XCTUnwrap(
                Bundle.module.url(forResource: "minimongo_cases", withExtension: "json", subdirectory: "Fixtures")
            ).path
        let file = try EJSON.parse(String(contentsOfFile: path, encoding: .utf8))
        guard case .array(let cases)? = file["cases"] else { return XCTFail("no cases in \(path)") }
        var outcomes: [String: Outcome] = [:]
        for value in cases {
            guard case .object(let testCase) = value, let kind = testCase["kind"]?.stringValue else { continue }
            var outcome = outcomes[kind] ?? Outcome()
            if ["hasUndefined", "hasFunction", "hasInvalidDate"].contains(where: { testCase[$0] == true })
                || EJSON.stringify(value).contains("\"$undefined\"")
            {
                outcome.skipped += 1
            } else {
                switch Self.run(testCase) {
                case .pass: outcome.passed += 1
                case .notApplicable: outcome.notApplicable += 1
                case .fail(let why): outcome.failed.append((testCase, why))
                }
            }
            outcomes[kind] = outcome
        }
        var report =
            "minimongo cases (\(file["commit"]?.stringValue ?? "?")): kind passed/run, "
            + "not applicable, skipped (undefined, functions, invalid dates)\n"
        var failures = ""
        var unexplained = 0
        for (kind, outcome) in outcomes.sorted(by: { $0.key < $1.key }) {
            let run = outcome.passed + outcome.failed.count
            report +=
                "  \(kind.padding(toLength: 16, withPad: " ", startingAt: 0)) \(outcome.passed)/\(run)  "
                + "n/a \(outcome.notApplicable)  skipped \(outcome.skipped)\n"
            for (testCase, why) in outcome.failed {
                let difference = Self.documentedDifference(testCase, why: why)
                if difference == nil { unexplained += 1 }
                var shown = testCase
                for key in ["test", "file"] { shown.removeValue(forKey: key) }
                failures += "[\(difference ?? "UNEXPLAINED")] \(why)\n    \(EJSON.stringify(.object(shown)))\n"
            }
        }
        let total = outcomes.values.reduce(0) { $0 + $1.passed }
        let ran = outcomes.values.reduce(0) { $0 + $1.passed + $1.failed.count }
        report +=
            "  all: \(total)/\(ran) (\(ran - total) differ, \(unexplained) not among the documented differences)\n"
        print(report)
        if let reportPath = ProcessInfo.processInfo.environment["MINIMONGO_REPORT"] {
            try (report + "\n" + failures).write(toFile: reportPath, atomically: true, encoding: .utf8)
        }
        XCTAssertEqual(unexplained, 0, "cases that differ from minimongo for no documented reason:\n" + failures)
        XCTAssertGreaterThan(total, 1_400, "the case file ran")
    }

    // MARK: - Documented differences

    /// The README's difference a failing case falls under, if any.
    static func documentedDifference(_ testCase: EJSONObject, why: String = "") -> String? {
        let text = EJSON.stringify(.object(testCase))
        if text.contains("\"$near\"") || text.contains("$geoWithin") || text.contains("$within") {
            return "geospatial operators"
        }
        if text.contains("\"$where\"") { return "$where" }
        if testCase["kind"] == "sortKeysError" { return "parallel arrays sort" }
        return meteor341KeyRule(testCase, why: why)
    }

    /// Meteor 3.4.1's key rule (PR #13975), written out apart from the code under test: minimongo's
    /// `/^\$|^\.|\.\.|\.$|\0/`.
    private static func meteor341Refuses(_ key: String) -> Bool {
        key.hasPrefix("$") || key.hasPrefix(".") || key.hasSuffix(".") || key.contains("..") || key.contains("\0")
    }

    /// A case of the client test file (stored before Meteor 3.4.1's PR #13975 changed it) expecting the refusal of a
    /// document key with a dot inside (`{"a.b": 1}` inserted, `{$set: {a: {"a.b": 1}}}`), which 3.4.1 stores; or
    /// expecting the old message for a key 3.4.1 still refuses, refused here in 3.4.1's words.
    private static func meteor341KeyRule(_ testCase: EJSONObject, why: String) -> String? {
        guard ["modifyError", "upsertError", "writeError"].contains(testCase["kind"]?.stringValue ?? "") else {
            return nil
        }
        let oldSuffix = " must not contain '.'"
        if let expected = testCase["messageContains"]?.stringValue, expected.hasPrefix("Key "),
            expected.hasSuffix(oldSuffix)
        {
            let key = String(expected.dropFirst(4).dropLast(oldSuffix.count))
            guard meteor341Refuses(key) else { return "keys with dots (Meteor 3.4.1)" }
            let newWords = ["start or end with '.'", "contain consecutive dots"].map { "Key \(key) must not \($0)" }
            return newWords.contains { why == "message \"\($0)\"" } ? "keys with dots (Meteor 3.4.1's message)" : nil
        }
        func holdsAllowedDottedKey(_ value: EJSONValue) -> Bool {
            switch value {
            case .object(let object):
                return object.contains { key, child in
                    (key.contains(".") && !meteor341Refuses(key)) || holdsAllowedDottedKey(child)
                }
            case .array(let elements): return elements.contains(where: holdsAllowedDottedKey)
            default: return false
            }
        }
        // The values a write stores: an inserted document, a replacement, an operator's arguments (not its paths).
        let op = testCase["op"]?.objectValue ?? [:]
        let stored: [EJSONValue]
        if op["op"] == "insert" {
            stored = [op["doc"] ?? .null]
        } else if case .object(let modifier) = op["modifier"] ?? testCase["modifier"] ?? .null {
            stored =
                modifier.keys.contains(where: { $0.hasPrefix("$") })
                ? modifier.values.flatMap { $0.objectValue.map { Array($0.values) } ?? [] } : [.object(modifier)]
        } else {
            stored = []
        }
        return stored.contains(where: holdsAllowedDottedKey) ? "keys with dots (Meteor 3.4.1)" : nil
    }

    // MARK: - Running one case

    enum Result {
        case pass
        case fail(String)
        case notApplicable
    }

    static func run(_ testCase: EJSONObject) -> Result {
        do {
            switch testCase["kind"]?.stringValue ?? "" {
            case "match": return try match(testCase)
            case "selectorError": return selectorError(testCase)
            case "find": return try find(testCase)
            case "findError": return findError(testCase)
            case "write": return try write(testCase)
            case "writeError": return writeError(testCase)
            case "projection": return try projection(testCase)
            case "projectionError": return projectionError(testCase)
            case "modify": return try modify(testCase)
            case "modifyError": return modifyError(testCase)
            case "upsert": return try upsert(testCase)
            case "upsertError": return upsertError(testCase)
            case "sort": return try sort(testCase)
            case "valueOrder": return valueOrder(testCase)
            case "sortError":
                return (try? MongoSort(testCase["sort"] ?? .null)) == nil ? .pass : .fail("sort specifier accepted")
            case "sortCompare": return try sortCompare(testCase)
            case "sortKeysError": return try sortKeysError(testCase)
            case "internal": return internalAPI(testCase)
            case "collationMatch": return try collationMatch(testCase)
            case "collationSortCompare": return try collationSortCompare(testCase)
            case "collatorCompare": return try collatorCompare(testCase)
            case "collationError": return collationError(testCase)
            case "upsertResult": return try upsertResult(testCase)
            default: return .notApplicable // binarySearch, lookup, sortKeys: minimongo's internals
            }
        } catch {
            return .fail("threw \(error)")
        }
    }

    private static func match(_ testCase: EJSONObject) throws -> Result {
        let selector = try MongoSelector(testCase["selector"] ?? [:])
        let matched = selector.matches(testCase["doc"]?.objectValue ?? [:])
        return matched == (testCase["expected"] == true) ? .pass : .fail("matched: \(matched)")
    }

    private static func selectorError(_ testCase: EJSONObject) -> Result {
        do {
            let selector = try MongoSelector(testCase["selector"] ?? [:])
            if let doc = testCase["doc"]?.objectValue { _ = selector.matches(doc) }
            return .fail("selector accepted")
        } catch {
            return .pass
        }
    }

    /// A cache holding the case's documents (`inserts` in order, or the `ops` applied in order).
    private static func collection(_ testCase: EJSONObject) throws -> (Database, LocalCollection) {
        let database = Database()
        if case .array(let inserts)? = testCase["inserts"] {
            for document in inserts { try apply(["op": "insert", "doc": document], to: database) }
        }
        if case .array(let ops)? = testCase["ops"] {
            for op in ops { try apply(op.objectValue ?? [:], to: database) }
        }
        return (database, database.collection("c"))
    }

    nonisolated(unsafe) private static var generated = 0

    @discardableResult
    private static func apply(_ op: EJSONObject, to database: Database) throws -> Int {
        switch op["op"]?.stringValue {
        case "insert":
            var document = op["doc"]?.objectValue ?? [:]
            let id =
                document["_id"]
                ?? {
                    generated += 1
                    return .string("generated\(generated)")
                }()
            document["_id"] = id
            return try LocalWrites.insert(document, id: id, into: "c", database: database) == nil ? 0 : 1
        case "update", "upsert":
            var options = op["options"]?.objectValue ?? [:]
            if op["op"] == "upsert" { options["upsert"] = true }
            return try LocalWrites.update(
                selector: op["selector"] ?? [:], modifier: MongoModifier(op["modifier"] ?? [:]), options: options,
                newID: {
                    generated += 1
                    return .string("generated\(generated)")
                }, in: "c", database: database)
        case "remove":
            return try LocalWrites.remove(selector: op["selector"] ?? [:], from: "c", database: database)
        default:
            throw QueryError("unknown op \(op)")
        }
    }

    private static func find(_ testCase: EJSONObject) throws -> Result {
        let (_, collection) = try collection(testCase)
        let findOptions = try Self.caseFindOptions(testCase)
        let selector = testCase["selector"] ?? [:]
        let actual: EJSONValue
        switch testCase["method"]?.stringValue {
        case "count":
            actual = .number(Double(try collection.find(selector, findOptions).count))
            return actual == testCase["expectedCount"] ? .pass : .fail("count \(EJSON.stringify(actual))")
        case "findOne":
            let found = try collection.findOne(selector, findOptions)
            if testCase["expectedNotFound"] == true {
                return found == nil ? .pass : .fail("found \(EJSON.stringify(found!.ejsonValue))")
            }
            actual = found.map(withProjectedID(findOptions)) ?? .null
        default:
            actual = .array(try collection.find(selector, findOptions).map(withProjectedID(findOptions)))
        }
        let result = follow(testCase["resultPath"], in: actual)
        if let expected = testCase["expectedCount"] {
            return result == expected ? .pass : .fail("got \(EJSON.stringify(result))")
        }
        return EJSON.equals(result, testCase["expected"] ?? .null) ? .pass : .fail("got \(EJSON.stringify(result))")
    }

    /// A result document as minimongo returns it: its `_id` unless the projection leaves it out.
    private static func withProjectedID(_ options: FindOptions) -> (Document) -> EJSONValue {
        let excludesID = options.fields?["_id"].map { !$0.isTruthy } ?? false
        return { document in
            guard excludesID, case .object(var object) = document.ejsonValue else { return document.ejsonValue }
            object.removeValue(forKey: "_id")
            return .object(object)
        }
    }

    /// The value `path` leads to (a field, an index, `length`, or `{map: path}` over an array).
    private static func follow(_ path: EJSONValue?, in value: EJSONValue) -> EJSONValue {
        guard case .array(let steps)? = path else { return value }
        var current = value
        for step in steps {
            switch step {
            case .string("length"):
                if case .array(let items) = current {
                    current = .number(Double(items.count))
                } else {
                    current = current["length"] ?? .null
                }
            case .string(let field): current = current[field] ?? .null
            case .number(let index):
                if case .array(let items) = current, Int(index) < items.count {
                    current = items[Int(index)]
                } else {
                    current = .null
                }
            case .object(let object):
                if case .array(let items) = current, let inner = object["map"] {
                    current = .array(items.map { follow(inner, in: $0) })
                }
            default: break
            }
        }
        return current
    }

    /// The case's `options` as `find` takes them.
    private static func caseFindOptions(_ testCase: EJSONObject) throws -> FindOptions {
        let options = testCase["options"]?.objectValue ?? [:]
        return FindOptions(
            sort: options["sort"], skip: options["skip"]?.intValue ?? 0, limit: options["limit"]?.intValue,
            fields: options["fields"], collation: try options["collation"].map { try Collation($0) })
    }

    private static func findError(_ testCase: EJSONObject) -> Result {
        do {
            let (_, collection) = try collection(testCase)
            let findOptions = try Self.caseFindOptions(testCase)
            let found = try collection.find(testCase["selector"] ?? [:], findOptions)
            return .fail("no error (found \(found.count))")
        } catch {
            if let expected = testCase["messageContains"]?.stringValue, !"\(error)".contains(expected) {
                return .fail("message \"\(error)\"")
            }
            return .pass
        }
    }

    private static func write(_ testCase: EJSONObject) throws -> Result {
        let (database, _) = try collection(testCase)
        let count = try apply(testCase["op"]?.objectValue ?? [:], to: database)
        return .number(Double(count)) == testCase["expected"] ? .pass : .fail("affected \(count)")
    }

    private static func writeError(_ testCase: EJSONObject) -> Result {
        do {
            let (database, _) = try collection(testCase)
            let count = try apply(testCase["op"]?.objectValue ?? [:], to: database)
            return .fail("no error (affected \(count))")
        } catch let error as QueryError {
            if let expected = testCase["messageContains"]?.stringValue, !error.message.contains(expected) {
                return .fail("message \"\(error.message)\"")
            }
            return .pass
        } catch {
            return .pass
        }
    }

    private static func projection(_ testCase: EJSONObject) throws -> Result {
        let projection = try MongoProjection(testCase["fields"] ?? [:])
        let result = follow(testCase["resultPath"], in: .object(projection.apply(testCase["doc"]?.objectValue ?? [:])))
        return EJSON.equals(result, testCase["expected"] ?? .null) ? .pass : .fail("got \(EJSON.stringify(result))")
    }

    private static func projectionError(_ testCase: EJSONObject) -> Result {
        do {
            _ = try MongoProjection(testCase["fields"] ?? [:])
            return .fail("projection accepted")
        } catch {
            if let expected = testCase["messageContains"]?.stringValue, !error.message.contains(expected) {
                return .fail("message \"\(error.message)\"")
            }
            return .pass
        }
    }

    private static func withoutID(_ value: EJSONValue, if ignoring: Bool) -> EJSONValue {
        guard ignoring, case .object(var object) = value else { return value }
        object.removeValue(forKey: "_id")
        return .object(object)
    }

    /// The document a modifier case starts from: as minimongo's test inserts it, with an `_id`.
    private static func inserted(_ testCase: EJSONObject) -> EJSONObject {
        var document = testCase["doc"]?.objectValue ?? [:]
        if document["_id"] == nil { document["_id"] = "inserted" }
        return document
    }

    private static func modify(_ testCase: EJSONObject) throws -> Result {
        let document = inserted(testCase)
        let selector = try MongoSelector(testCase["selector"] ?? [:])
        let modified = try MongoModifier(testCase["modifier"] ?? [:]).apply(
            to: document, arrayIndices: selector.arrayIndices(in: document))
        if testCase["expectedInstanceOf"] == "Date" {
            if case .date = follow(testCase["resultPath"], in: .object(modified)) { return .pass }
            return .fail("not a date: \(EJSON.stringify(.object(modified)))")
        }
        let ignoring = testCase["ignoreId"] == true
        return EJSON.equals(
            withoutID(.object(modified), if: ignoring), withoutID(testCase["expected"] ?? .null, if: ignoring))
            ? .pass : .fail("got \(EJSON.stringify(.object(modified)))")
    }

    private static func modifyError(_ testCase: EJSONObject) -> Result {
        do {
            let document = inserted(testCase)
            let selector = try MongoSelector(testCase["selector"] ?? [:])
            let modified = try MongoModifier(testCase["modifier"] ?? [:]).apply(
                to: document, arrayIndices: selector.arrayIndices(in: document))
            return .fail("no error: \(EJSON.stringify(.object(modified)))")
        } catch {
            return .pass
        }
    }

    private static func upsert(_ testCase: EJSONObject) throws -> Result {
        let database = Database()
        if let initial = testCase["initialDoc"]?.objectValue {
            try apply(["op": "insert", "doc": .object(initial)], to: database)
        }
        let before = Set(database.snapshot.allDocuments(in: "c").map(\.id))
        try apply(
            ["op": "upsert", "selector": testCase["selector"] ?? [:], "modifier": testCase["modifier"] ?? [:]],
            to: database)
        let after = database.snapshot.allDocuments(in: "c")
        let changed = after.first { !before.contains($0.id) } ?? after.first
        guard let changed else { return .fail("nothing inserted") }
        if let insertedID = testCase["expectedInsertedId"], !EJSON.equals(changed.idValue, insertedID) {
            return .fail("inserted id \(EJSON.stringify(changed.idValue))")
        }
        let ignoring = testCase["ignoreId"] == true
        return EJSON.equals(
            withoutID(changed.ejsonValue, if: ignoring), withoutID(testCase["expected"] ?? .null, if: ignoring))
            ? .pass : .fail("got \(EJSON.stringify(changed.ejsonValue))")
    }

    private static func upsertError(_ testCase: EJSONObject) -> Result {
        do {
            let count = try apply(
                ["op": "upsert", "selector": testCase["selector"] ?? [:], "modifier": testCase["modifier"] ?? [:]],
                to: Database())
            return .fail("no error (affected \(count))")
        } catch {
            return .pass
        }
    }

    private static func documents(_ values: [EJSONValue]) -> [Document] {
        values.enumerated().map { index, value in
            let object = value.objectValue ?? [:]
            let id = object["_id"].map(MongoID.documentID) ?? "doc\(index)"
            return Document(id: id, fields: object.filter { $0.key != "_id" })
        }
    }

    private static func sort(_ testCase: EJSONObject) throws -> Result {
        let sort = try MongoSort(testCase["sort"] ?? [:])
        guard case .array(let values)? = testCase["docs"] else { return .notApplicable }
        let docs = documents(values)
        for index in docs.indices.dropLast() {
            let (a, b) = (docs[index], docs[index + 1])
            if sort.compare(a, a) != 0 || sort.compare(a, b) >= 0 || sort.compare(b, a) <= 0 {
                return .fail(
                    "not ascending at \(index): \(EJSON.stringify(values[index])) "
                        + "vs \(EJSON.stringify(values[index + 1]))"
                )
            }
        }
        return .pass
    }

    private static func valueOrder(_ testCase: EJSONObject) -> Result {
        guard case .array(let values)? = testCase["values"] else { return .notApplicable }
        for index in values.indices.dropLast() {
            let (a, b) = (values[index], values[index + 1])
            if EJSONOrdering.compare(a, a) != 0 || EJSONOrdering.compare(a, b) >= 0 || EJSONOrdering.compare(b, a) <= 0
            {
                return .fail("not ascending: \(EJSON.stringify(a)) vs \(EJSON.stringify(b))")
            }
        }
        return .pass
    }

    private static func sortCompare(_ testCase: EJSONObject) throws -> Result {
        let sort = try MongoSort(testCase["sort"] ?? [:])
        let docs = documents([testCase["a"] ?? [:], testCase["b"] ?? [:]])
        let order = sort.compare(docs[0], docs[1])
        return .number(Double(order.signum())) == testCase["expected"] ? .pass : .fail("compared \(order)")
    }

    private static func sortKeysError(_ testCase: EJSONObject) throws -> Result {
        let database = Database()
        var second = testCase["doc"]?.objectValue ?? [:]
        second["_id"] = "second"
        try apply(["op": "insert", "doc": testCase["doc"] ?? [:]], to: database)
        try apply(["op": "insert", "doc": .object(second)], to: database)
        do {
            _ = try database.collection("c").find([:], FindOptions(sort: testCase["sort"]))
            return .fail("sorted parallel arrays")
        } catch {
            return .pass
        }
    }

    private static func internalAPI(_ testCase: EJSONObject) -> Result {
        guard testCase["api"] == "LocalCollection._idsMatchedBySelector", case .array(let args)? = testCase["args"],
            let selector = args.first
        else {
            return .notApplicable
        }
        let ids = LocalWrites.specificIDs(in: selector)
        return EJSON.equals(ids.map { .array($0) } ?? .null, testCase["expected"] ?? .null)
            ? .pass : .fail("ids \(ids.map { EJSON.stringify(.array($0)) } ?? "null")")
    }

    // MARK: - Collation (Meteor 3.5) and upsert results (3.3.2)

    private static func collator(_ testCase: EJSONObject) throws -> Collator {
        try Collator(Collation(testCase["collation"] ?? .null))
    }

    private static func collationMatch(_ testCase: EJSONObject) throws -> Result {
        let selector = try MongoSelector(testCase["selector"] ?? [:], collator: collator(testCase))
        let matched = selector.matches(testCase["doc"]?.objectValue ?? [:])
        return matched == (testCase["expected"] == true) ? .pass : .fail("matched: \(matched)")
    }

    private static func collationSortCompare(_ testCase: EJSONObject) throws -> Result {
        var sort = try MongoSort(testCase["sort"] ?? [:])
        sort.collator = try collator(testCase)
        let docs = documents([testCase["a"] ?? [:], testCase["b"] ?? [:]])
        let order = sort.compare(docs[0], docs[1])
        return .number(Double(order.signum())) == testCase["expected"] ? .pass : .fail("compared \(order)")
    }

    private static func collatorCompare(_ testCase: EJSONObject) throws -> Result {
        guard let a = testCase["a"]?.stringValue, let b = testCase["b"]?.stringValue else { return .notApplicable }
        let order = try collator(testCase).compare(a, b)
        return .number(Double(order.signum())) == testCase["expected"] ? .pass : .fail("compared \(order)")
    }

    private static func collationError(_ testCase: EJSONObject) -> Result {
        do {
            _ = try collator(testCase)
            return .fail("collation accepted")
        } catch {
            if let expected = testCase["messageContains"]?.stringValue, !"\(error)".contains(expected) {
                return .fail("message \"\(error)\"")
            }
            return .pass
        }
    }

    private static func upsertResult(_ testCase: EJSONObject) throws -> Result {
        let (database, _) = try collection(testCase)
        let op = testCase["op"]?.objectValue ?? [:]
        var options = op["options"]?.objectValue ?? [:]
        options["upsert"] = true
        let (_, insertedID) = try LocalWrites.upsert(
            selector: op["selector"] ?? [:], modifier: MongoModifier(op["modifier"] ?? [:]), options: options,
            newID: {
                generated += 1
                return .string("generated\(generated)")
            }, in: "c", database: database)
        let hasID = insertedID != nil
        return hasID == (testCase["expectedHasInsertedId"] == true) ? .pass : .fail("insertedId: \(hasID)")
    }
}
