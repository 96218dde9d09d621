import EJSON
import Foundation
import TestSupport
import XCTest

@_spi(Storage) @testable import MeteorDDP

/// Documents keep their fields packed: every EJSON value must come back exactly, and changes, comparisons and
/// change details must mean what they meant on EJSON trees.
final class PackedDocumentTests: XCTestCase {
    private let everyKind: EJSONObject = [
        "null": .null,
        "yes": true,
        "no": false,
        "zero": 0,
        "negativeZero": .number(-0.0),
        "small": 42,
        "negative": -7,
        "largestExact": .number(9_007_199_254_740_992),
        "beyondExact": .number(9_007_199_254_740_994),
        "huge": .number(1e300),
        "fraction": 52.52,
        "nan": .number(.nan),
        "infinity": .number(.infinity),
        "empty": "",
        "text": "Grüße, 世界 🌍 — a string long enough to live on the heap",
        "date": .date(millisecondsSince1970: 1_700_000_000_000),
        "binary": .binary(Data([0, 1, 2, 255])),
        "emptyBinary": .binary(Data()),
        "array": [1, "two", [3, ["four": 4]], .null],
        "emptyArray": [],
        "object": ["city": "Berlin", "nested": ["deeper": ["deepest": true]]],
        "emptyObject": [:],
        "custom": .custom(type: "point", value: ["x": 1, "y": 2.5]),
        "regex": .regularExpression(pattern: "^a.*[b]$", flags: "gi"),
        "regexInArray": [.regularExpression(pattern: "", flags: ""), "after"]
    ]

    func testEveryKindOfValueComesBackExactlyAndInOrder() {
        let document = Document(id: "all", fields: everyKind)
        let fields = document.fields
        XCTAssertEqual(Array(fields.keys), Array(everyKind.keys))
        for (name, value) in everyKind {
            XCTAssertEqual(fields[name], value, name)
            XCTAssertEqual(document[name], value, name)
        }
        XCTAssertEqual(document.fields["negativeZero"]?.doubleValue?.sign, .minus)
        XCTAssertEqual(document.fields["beyondExact"]?.doubleValue, 9_007_199_254_740_994)
        XCTAssertEqual(document.fieldCount, everyKind.count)
        XCTAssertEqual(document.fieldNames, Array(everyKind.keys))
        XCTAssertNil(document["missing"])
        XCTAssertEqual(document.value(at: "object.nested.deeper.deepest"), true)
        XCTAssertEqual(document.value(at: "_id"), "all")
    }

    func testADocumentLargerThanThePackingBufferComesBackExactlyWithTheDecodersBytes() {
        /// Fields with `nested` in each, strings and arrays of growing length: the packed fields pass the buffer's
        /// first size many times over, with containers open wherever it grows.
        func largeFields(nested: EJSONObject) -> EJSONObject {
            var fields: EJSONObject = [:]
            for index in 0..<40 {
                fields["field\(index)"] = [
                    "text": .string(String(repeating: "é", count: index * 7)),
                    "numbers": .array((0..<index).map { .number(Double($0) * 1.5) }),
                    "nested": .object(nested)
                ]
            }
            return fields
        }
        let fields = largeFields(nested: everyKind)
        let document = Document(id: "large", fields: fields)
        XCTAssertGreaterThan(document.withBytes { $0.count }, 10 * Document.packingScratchBytes)
        XCTAssertEqual(document.fields, fields)
        XCTAssertEqual(document.fieldNames, Array(fields.keys))
        // Every container's length exact (reading back skips some of them), as the offline store's check demands.
        XCTAssertNoThrow(try document.withBytes { try Document(id: "large", validatingPackedFields: $0) })
        // The same bytes as decoding the frame straight from its JSON (a packer of its own; it takes plain JSON only).
        let plain = largeFields(nested: [
            "text": "Grüße 🌍", "numbers": [0, -7, 52.52, 1e300], "flags": [true, false, .null],
            "deeper": ["a": ["b": 1]]
        ])
        let frame =
            #"{"msg":"added","collection":"c","id":"large","fields":"#
            + String(decoding: EJSON.serialize(.object(plain)), as: UTF8.self) + "}"
        XCTAssertNotNil(DocumentMessageDecoder.decode(frame), "the decoder takes the frame")
        XCTAssertNil(DocumentMessageDecoding.disagreement(frame))
    }

    func testSettingReplacesInPlaceAppendsNewFieldsAndClears() {
        let document = Document(id: "a", fields: ["name": "Ada", "score": 25, "color": "blue"])
        let changed = document.setting(["score": 30, "rank": 1, "name": .object(["first": "Ada"])], clearing: ["color"])
        XCTAssertEqual(Array(changed.fields.keys), ["name", "score", "rank"])
        XCTAssertEqual(changed["score"], 30)
        XCTAssertEqual(changed["name"], ["first": "Ada"])
        XCTAssertEqual(changed["rank"], 1)
        XCTAssertNil(changed["color"])
        // The original is untouched.
        XCTAssertEqual(document["score"], 25)
        XCTAssertEqual(document["color"], "blue")
        // A field both set and cleared is cleared.
        XCTAssertNil(document.setting(["color": "red", "new": 1], clearing: ["color", "new"])["color"])
        XCTAssertEqual(
            document.setting(["color": "red", "new": 1], clearing: ["color", "new"]).fieldNames, ["name", "score"])
        // Clearing a field that does not exist changes nothing.
        XCTAssertEqual(document.setting([:], clearing: ["nope"]), document)
    }

    func testSettingWhatIsAlreadyThereGivesBackTheSameVersion() {
        let document = Document(id: "a", fields: ["name": "Ada", "score": 25, "nested": ["p": 1, "q": 2]])
        XCTAssertTrue(document.setting(["score": 25]).isIdentical(to: document))
        // Equal by meaning, not byte for byte: still the same version.
        XCTAssertTrue(document.setting(["score": .number(25.0), "nested": ["q": 2, "p": 1]]).isIdentical(to: document))
        XCTAssertTrue(document.setting([:], clearing: ["missing"]).isIdentical(to: document))
        // Any real difference makes a new version.
        XCTAssertFalse(document.setting(["score": 26]).isIdentical(to: document))
        XCTAssertFalse(document.setting(["score": "25"]).isIdentical(to: document))
        XCTAssertFalse(document.setting(["score": 25, "rank": 1]).isIdentical(to: document))
        XCTAssertFalse(document.setting(["name": "Ada"], clearing: ["nested"]).isIdentical(to: document))
        XCTAssertEqual(document.setting(["name": "Ada"], clearing: ["nested"]).fieldNames, ["name", "score"])
    }

    func testIDsOfAnyLengthAndScriptComeBackAndOrderLikeStrings() {
        let ids = [
            "", "a", "ab", "b", "b0000000000000001", "b000000000000001", "Grüße-世界-🌍",
            String(repeating: "x", count: 300)
        ]
        let documents = ids.map { Document(id: $0, fields: ["v": 1]) }
        XCTAssertEqual(documents.map(\.id), ids)
        for a in documents {
            for b in documents {
                XCTAssertEqual(a.hasSmallerID(than: b), a.id < b.id, "\(a.id) < \(b.id)")
                XCTAssertEqual(a.hasSameID(as: b), a.id == b.id)
            }
        }
        XCTAssertEqual(documents[4].setting(["v": 2]).id, ids[4])
    }

    func testEqualityIgnoresKeyOrderAndNumberSpelling() {
        let a = Document(id: "a", fields: ["x": 1, "nested": ["p": 1, "q": 2]])
        let b = Document(id: "a", fields: ["nested": ["q": 2, "p": 1], "x": 1])
        XCTAssertEqual(a, b)
        XCTAssertEqual(Document(id: "z", fields: ["n": .number(-0.0)]), Document(id: "z", fields: ["n": 0]))
        XCTAssertEqual(
            Document(id: "n", fields: ["n": .number(.nan)]), Document(id: "n", fields: ["n": .number(-.nan)]))
        XCTAssertNotEqual(a, Document(id: "a", fields: ["x": 2, "nested": ["p": 1, "q": 2]]))
        XCTAssertNotEqual(a, Document(id: "a", fields: ["x": 1, "nested": ["p": 1, "q": 3]]))
        XCTAssertNotEqual(a, Document(id: "b", fields: ["x": 1, "nested": ["p": 1, "q": 2]]))
        XCTAssertNotEqual(a, Document(id: "a", fields: ["x": 1]))
        XCTAssertNotEqual(Document(id: "a", fields: ["x": "1"]), Document(id: "a", fields: ["x": 1]))
    }

    func testAFieldRemovedAndAddedBackIsNoChange() {
        let database = Database()
        let key = DocumentKey(collectionName: "players", documentID: "ada")
        database.apply(.added(key, ["a": 1, "b": 2]))
        let recorder = ChangesRecorder(database)
        database.performUpdates {
            database.apply(.changed(key, [:], cleared: ["a"]))
            database.apply(.changed(key, ["a": 1], cleared: []))
        }
        database.apply(.changed(key, ["b": 3], cleared: []))
        let changes = recorder.changes
        XCTAssertEqual(changes.count, 1)
        XCTAssertEqual(changes.first?.changeDetails(for: key)?.changedFields, ["b": .set(3)])
    }

    func testChangedFieldsComeFromThePackedVersions() {
        let key = DocumentKey(collectionName: "players", documentID: "ada")
        let details = DocumentChangeDetails(
            key: key, fieldsBefore: ["name": "Ada", "score": 25, "tags": ["a"]],
            fieldsAfter: ["name": "Ada", "score": 26, "tags": ["a", "b"], "rank": 1])
        XCTAssertEqual(details.changeType, .update)
        XCTAssertEqual(details.changedFields, ["score": .set(26), "tags": .set(["a", "b"]), "rank": .set(1)])
        let removal = DocumentChangeDetails(key: key, fieldsBefore: ["name": "Ada"], fieldsAfter: nil)
        XCTAssertEqual(removal.changedFields, ["name": .removed])
        XCTAssertEqual(removal.fieldsBefore, ["name": "Ada"])
    }

    /// `setting(_:clearing:)` against the same change made on an `EJSONObject` (a field set keeps its place, a new one
    /// is appended, a cleared one goes, a field both set and cleared is cleared), over random documents and changes,
    /// both for the fields and for whether the result is the very same version (nothing changed).
    func testSettingMatchesTheSameChangeOnEJSONObjects() {
        var generator = SplitMix64(seed: 0x5e771)
        let names = ["a", "bb", "name", "score", "tags", "location", "é", "a-much-longer-field-name-than-sixteen-bytes"]
        func value() -> EJSONValue {
            switch generator.next(below: 7) {
            case 0: return .null
            case 1: return .bool(generator.next(below: 2) == 0)
            case 2: return .number(Double(generator.next(below: 4)))
            case 3: return .number(generator.next(in: -1e6...1e6))
            case 4: return .string(String(repeating: "x", count: Int(generator.next(below: 40))))
            case 5: return .array((0..<generator.next(below: 4)).map { .number(Double($0)) })
            default:
                return .object([
                    "city": .string("c\(generator.next(below: 3))"), "zip": .number(Double(generator.next(below: 3)))
                ])
            }
        }
        func object(maximumCount: UInt64) -> EJSONObject {
            var object: EJSONObject = [:]
            for _ in 0..<generator.next(below: maximumCount + 1) {
                object[names[Int(generator.next(below: UInt64(names.count)))]] = value()
            }
            return object
        }
        for round in 0..<3_000 {
            let fields = object(maximumCount: 8)
            let document = Document(id: "d\(round)", fields: fields)
            var changes = object(maximumCount: 4)
            // Often set a field to the value it already has (no change), as a server repeating itself does.
            if !fields.isEmpty, generator.next(below: 2) == 0 {
                let index = Int(generator.next(below: UInt64(fields.count)))
                changes[fields.keys[index]] = fields.values[index]
            }
            let cleared = (0..<generator.next(below: 3)).map { _ in
                names[Int(generator.next(below: UInt64(names.count)))]
            }
            var expected = fields
            for (name, value) in changes where !cleared.contains(name) { expected[name] = value }
            for name in cleared { expected.removeValue(forKey: name) }

            let result = document.setting(changes, clearing: cleared)
            XCTAssertEqual(Array(result.fields.keys), Array(expected.keys), "round \(round)")
            XCTAssertEqual(result.fields, expected, "round \(round)")
            XCTAssertEqual(result.id, document.id)
            let unchanged = Array(expected.keys) == Array(fields.keys) && expected == fields
            XCTAssertEqual(
                result.isIdentical(to: document), unchanged, "round \(round): \(fields) + \(changes) - \(cleared)")
            // The packed form is the one a fresh document of those fields has.
            XCTAssertTrue(result.hasSameFields(as: Document(id: "x", fields: expected)), "round \(round)")
        }
    }

    /// `print(document)` shows its id and fields (it showed `Document(storage: MeteorDDP.Document.Storage)`).
    func testADocumentPrintsAsItsEJSON() {
        let document = Document(id: "lovelace", fields: ["name": "Ada", "born": .date(Date(timeIntervalSince1970: 0))])
        XCTAssertEqual("\(document)", #"{"_id":"lovelace","name":"Ada","born":{"$date":0}}"#)
        XCTAssertEqual(String(describing: EJSONValue.array([1, "a"])), #"[1,"a"]"#)
    }
}
