import EJSON
import XCTest

@testable import MeteorDDP

/// Modifiers as minimongo applies them (packages/minimongo `_modify`), written as our own cases: each row is
/// `(document, modifier, result)` in EJSON text, or the error minimongo raises.
final class MongoModifierTests: XCTestCase {
    private func modify(_ rows: [(String, String, String)], file: StaticString = #filePath, line: UInt = #line) throws {
        for (documentText, modifierText, expectedText) in rows {
            guard case .object(let document) = try EJSON.parse(documentText),
                case .object(let expected) = try EJSON.parse(expectedText)
            else {
                return XCTFail("not objects", file: file, line: line)
            }
            let result = try MongoModifier(EJSON.parse(modifierText)).apply(to: document)
            XCTAssertEqual(
                EJSON.stringify(.object(result)), EJSON.stringify(.object(expected)),
                "\(modifierText) on \(documentText)", file: file, line: line)
        }
    }

    private func exception(_ rows: [(String, String, String)], file: StaticString = #filePath, line: UInt = #line)
        throws
    {
        for (documentText, modifierText, message) in rows {
            guard case .object(let document) = try EJSON.parse(documentText) else {
                return XCTFail("not an object", file: file, line: line)
            }
            XCTAssertThrowsError(
                try MongoModifier(EJSON.parse(modifierText)).apply(to: document), modifierText, file: file, line: line
            ) { error in
                XCTAssertEqual(
                    (error as? QueryError)?.message, message, "\(modifierText) on \(documentText)", file: file,
                    line: line)
            }
        }
    }

    func testSetAndUnsetCreateAndRemovePaths() throws {
        try modify([
            (#"{"a":1}"#, #"{"$set":{"b":2}}"#, #"{"a":1,"b":2}"#),
            (#"{"a":1}"#, #"{"$set":{"a":{"c":1}}}"#, #"{"a":{"c":1}}"#),
            (#"{}"#, #"{"$set":{"a.b.c":1}}"#, #"{"a":{"b":{"c":1}}}"#),
            (#"{"a":[1,2]}"#, #"{"$set":{"a.1":5}}"#, #"{"a":[1,5]}"#),
            (#"{"a":[1]}"#, #"{"$set":{"a.3":5}}"#, #"{"a":[1,null,null,5]}"#),
            (#"{"a":[]}"#, #"{"$set":{"a.0.b":1}}"#, #"{"a":[{"b":1}]}"#),
            (#"{"a":1,"b":2}"#, #"{"$unset":{"a":""}}"#, #"{"b":2}"#),
            (#"{"a":{"b":1,"c":2}}"#, #"{"$unset":{"a.b":1}}"#, #"{"a":{"c":2}}"#),
            (#"{"a":[1,2]}"#, #"{"$unset":{"a.0":1}}"#, #"{"a":[null,2]}"#),
            (#"{}"#, #"{"$unset":{"a.b":1}}"#, #"{}"#),
            (#"{"a":1}"#, #"{"$setOnInsert":{"b":1}}"#, #"{"a":1}"#)
        ])
    }

    func testArithmetic() throws {
        try modify([
            (#"{"a":1}"#, #"{"$inc":{"a":2}}"#, #"{"a":3}"#),
            (#"{}"#, #"{"$inc":{"a":2}}"#, #"{"a":2}"#),
            (#"{"a":3}"#, #"{"$mul":{"a":2}}"#, #"{"a":6}"#),
            (#"{}"#, #"{"$mul":{"a":2}}"#, #"{"a":0}"#),
            (#"{"a":3}"#, #"{"$min":{"a":2}}"#, #"{"a":2}"#),
            (#"{"a":1}"#, #"{"$min":{"a":2}}"#, #"{"a":1}"#),
            (#"{"a":3}"#, #"{"$max":{"a":5}}"#, #"{"a":5}"#),
            (#"{}"#, #"{"$max":{"a":5}}"#, #"{"a":5}"#),
            (#"{"a":[1,2]}"#, #"{"$inc":{"a.2":10}}"#, #"{"a":[1,2,10]}"#),
            (#"{"a":[1,2]}"#, #"{"$inc":{"a.3":10}}"#, #"{"a":[1,2,null,10]}"#),
            (#"{"a":[]}"#, #"{"$push":{"a.1":99}}"#, #"{"a":[null,[99]]}"#),
            (#"{"a":[]}"#, #"{"$addToSet":{"a.1":99}}"#, #"{"a":[null,[99]]}"#)
        ])
        try exception([
            (#"{"a":1}"#, #"{"$inc":{"a":"x"}}"#, "Modifier $inc allowed for numbers only for field 'a'"),
            (#"{"a":"x"}"#, #"{"$inc":{"a":1}}"#, "Cannot apply $inc modifier to non-number for field 'a'"),
            (#"{"a":"x"}"#, #"{"$mul":{"a":1}}"#, "Cannot apply $mul modifier to non-number for field 'a'")
        ])
    }

    func testArrays() throws {
        try modify([
            (#"{}"#, #"{"$push":{"a":1}}"#, #"{"a":[1]}"#),
            (#"{"a":[1]}"#, #"{"$push":{"a":[2]}}"#, #"{"a":[1,[2]]}"#),
            (#"{"a":[1]}"#, #"{"$push":{"a":{"$each":[2,3]}}}"#, #"{"a":[1,2,3]}"#),
            (#"{"a":[1,4]}"#, #"{"$push":{"a":{"$each":[2,3],"$position":1}}}"#, #"{"a":[1,2,3,4]}"#),
            (#"{"a":[1,2]}"#, #"{"$push":{"a":{"$each":[3,4],"$slice":-2}}}"#, #"{"a":[3,4]}"#),
            (#"{"a":[1,2]}"#, #"{"$push":{"a":{"$each":[3],"$slice":0}}}"#, #"{"a":[]}"#),
            (
                #"{"a":[{"n":3},{"n":1}]}"#, #"{"$push":{"a":{"$each":[{"n":2}],"$sort":{"n":1},"$slice":2}}}"#,
                #"{"a":[{"n":1},{"n":2}]}"#
            ),
            (#"{"a":[1]}"#, #"{"$pushAll":{"a":[2,3]}}"#, #"{"a":[1,2,3]}"#),
            (#"{"a":[1,2]}"#, #"{"$addToSet":{"a":2}}"#, #"{"a":[1,2]}"#),
            (#"{"a":[1,2]}"#, #"{"$addToSet":{"a":{"$each":[3,1,4]}}}"#, #"{"a":[1,2,3,4]}"#),
            (#"{"a":[{"x":1,"y":2}]}"#, #"{"$addToSet":{"a":{"y":2,"x":1}}}"#, #"{"a":[{"x":1,"y":2},{"y":2,"x":1}]}"#),
            (#"{}"#, #"{"$addToSet":{"a":5}}"#, #"{"a":[5]}"#),
            (#"{"a":[1,2,3]}"#, #"{"$pop":{"a":1}}"#, #"{"a":[1,2]}"#),
            (#"{"a":[1,2,3]}"#, #"{"$pop":{"a":-1}}"#, #"{"a":[2,3]}"#),
            (#"{}"#, #"{"$pop":{"a":1}}"#, #"{}"#),
            (#"{"a":[2,1,2]}"#, #"{"$pull":{"a":2}}"#, #"{"a":[1]}"#),
            (#"{"a":[1,null,2]}"#, #"{"$pull":{"a":null}}"#, #"{"a":[1,2]}"#),
            (#"{"a":[[2],[2,1]]}"#, #"{"$pull":{"a":[2,1]}}"#, #"{"a":[[2]]}"#),
            (#"{"a":[{"b":1,"c":2},{"b":2,"c":2}]}"#, #"{"$pull":{"a":{"b":1}}}"#, #"{"a":[{"b":2,"c":2}]}"#),
            (#"{"a":[1,5,7]}"#, #"{"$pull":{"a":{"$gte":5}}}"#, #"{"a":[1]}"#),
            (
                #"{"a":[{"id":1},{"id":2},{"id":3}]}"#, #"{"$pull":{"a":{"$or":[{"id":1},{"id":3}]}}}"#,
                #"{"a":[{"id":2}]}"#
            ),
            (#"{"a":[1,2,3,1]}"#, #"{"$pullAll":{"a":[1,3]}}"#, #"{"a":[2]}"#),
            (#"{}"#, #"{"$pull":{"a":1}}"#, #"{}"#)
        ])
        try exception([
            (#"{"a":1}"#, #"{"$push":{"a":2}}"#, "Cannot apply $push modifier to non-array for field 'a'"),
            (#"{"a":[]}"#, #"{"$push":{"a":{"$each":1}}}"#, "$each must be an array for field 'a'"),
            (
                #"{"a":[]}"#, #"{"$push":{"a":{"$each":[1],"$position":-1}}}"#,
                "$position in $push must be zero or positive for field 'a'"
            ),
            (
                #"{"a":[]}"#, #"{"$push":{"a":{"$each":[{"n":1}],"$sort":{"n":1}}}}"#,
                "$sort requires $slice to be present for field 'a'"
            ),
            (
                #"{"a":[]}"#, #"{"$push":{"a":{"$each":[1],"$sort":{"n":1},"$slice":1}}}"#,
                "$push like modifiers using $sort require all elements to be objects for field 'a'"
            ),
            (#"{"a":1}"#, #"{"$addToSet":{"a":2}}"#, "Cannot apply $addToSet modifier to non-array for field 'a'"),
            (#"{"a":1}"#, #"{"$pop":{"a":1}}"#, "Cannot apply $pop modifier to non-array for field 'a'"),
            (#"{"a":true}"#, #"{"$pull":{"a":1}}"#, "Cannot apply $pull/pullAll modifier to non-array for field 'a'"),
            (#"{"a":[]}"#, #"{"$pullAll":{"a":1}}"#, "Modifier $pushAll/pullAll allowed for arrays only for field 'a'")
        ])
    }

    func testRenameAndCurrentDate() throws {
        try modify([
            (#"{"a":1,"b":2}"#, #"{"$rename":{"a":"c"}}"#, #"{"b":2,"c":1}"#),
            (#"{"a":{"b":1}}"#, #"{"$rename":{"a.b":"c.d"}}"#, #"{"a":{},"c":{"d":1}}"#),
            (#"{"b":2}"#, #"{"$rename":{"a":"c"}}"#, #"{"b":2}"#)
        ])
        try exception([
            (#"{"a":1}"#, #"{"$rename":{"a":"a"}}"#, "$rename source must differ from target for field 'a'"),
            (#"{"a":1}"#, #"{"$rename":{"a":5}}"#, "$rename target must be a string for field 'a'"),
            (#"{"a":[{"b":1}]}"#, #"{"$rename":{"a.0.b":"c"}}"#, "$rename source field invalid for field 'b'"),
            (#"{"a":1,"c":[]}"#, #"{"$rename":{"a":"c.0"}}"#, "$rename target field invalid for field 'a'"),
            (
                #"{}"#, #"{"$currentDate":{"a":{"$type":"timestamp"}}}"#,
                "Minimongo does currently only support the date type in $currentDate modifiers for field 'a'"
            ),
            (#"{}"#, #"{"$currentDate":{"a":1}}"#, "Invalid $currentDate modifier for field 'a'")
        ])
        let before = Date()
        let result = try MongoModifier(["$currentDate": ["a": true, "b": ["$type": "date"]]]).apply(to: [:])
        guard let a = result["a"]?.dateValue, let b = result["b"]?.dateValue else {
            return XCTFail("no dates: \(result)")
        }
        XCTAssertGreaterThanOrEqual(
            a.timeIntervalSince1970, (before.timeIntervalSince1970 * 1000).rounded(.down) / 1000)
        XCTAssertEqual(a.timeIntervalSince1970, b.timeIntervalSince1970, accuracy: 1)
    }

    func testReplacementAndTheID() throws {
        try modify([
            (#"{"_id":"x","a":1,"b":2}"#, #"{"c":3}"#, #"{"_id":"x","c":3}"#),
            (#"{"_id":"x","a":1}"#, #"{"_id":"x","c":3}"#, #"{"_id":"x","c":3}"#),
            (#"{"_id":"x"}"#, #"{"$set":{"_id":"x","a":1}}"#, #"{"_id":"x","a":1}"#)
        ])
        try exception([
            (#"{"_id":"x"}"#, #"{"_id":"y"}"#, #"The _id field cannot be changed from {_id: "x"} to {_id: "y"}"#),
            (
                #"{"_id":"x"}"#, #"{"$set":{"_id":"y"}}"#,
                #"After applying the update to the document {_id: "x", ...}, "#
                    + #"the (immutable) field '_id' was found to have been altered to _id: "y""#
            ),
            (#"{}"#, #"{"a":{"$b":1}}"#, "Key $b must not start with '$'"),
            (#"{}"#, #"{"a":{".c":1}}"#, "Key .c must not start or end with '.'"),
            (#"{}"#, #"{"a":{"b.":1}}"#, "Key b. must not start or end with '.'"),
            (#"{}"#, #"{"a":{"b..c":1}}"#, "Key b..c must not contain consecutive dots"),
            (#"{}"#, #"{"$set":{"x":{"p..q":1}}}"#, "Key p..q must not contain consecutive dots"),
            (#"{}"#, #"{"$set":{"a":{"$b":1}}}"#, "Key $b must not start with '$'")
        ])
    }

    /// Meteor 3.4.1 (PR #13975) stores keys with dots (MongoDB 5+ does): a literal `a.b` key is kept as it is, and a
    /// dotted path in a modifier still means the path, next to it.
    func testKeysWithDotsAreStoredAndAPathLeavesThemAlone() throws {
        try modify([
            (
                #"{"_id":"x"}"#, #"{"api_key.created":1,"n":{"a.b":{"c.d":2}}}"#,
                #"{"_id":"x","api_key.created":1,"n":{"a.b":{"c.d":2}}}"#
            ),
            (#"{"_id":"x"}"#, #"{"$set":{"x":{"p.q":1,"a.$b":2}}}"#, #"{"_id":"x","x":{"p.q":1,"a.$b":2}}"#),
            (#"{"_id":"x","a.b":1}"#, #"{"$set":{"a.b":2}}"#, #"{"_id":"x","a.b":1,"a":{"b":2}}"#),
            (#"{"_id":"x","a.b":1}"#, #"{"$unset":{"a.b":1}}"#, #"{"_id":"x","a.b":1}"#),
            (#"{"_id":"x","a.b":1}"#, #"{"$push":{"l":{"k.v":1}}}"#, #"{"_id":"x","a.b":1,"l":[{"k.v":1}]}"#)
        ])
        XCTAssertNoThrow(try MongoModifier.assertValidFieldNames(["api_key.created": ["a.$b": 1, "1.5": 2]]))
    }

    func testPathErrors() throws {
        try exception([
            (#"{"a":1}"#, #"{"$set":{"a.b":1}}"#, "cannot use the part 'b' to traverse 1"),
            (#"{"a":[]}"#, #"{"$set":{"a.b":1}}"#, "can't append to array using string field name [b]"),
            (#"{"a":[1]}"#, #"{"$set":{"a.0.b":1}}"#, "can't modify field 'b' of list value 1"),
            (#"{}"#, #"{"$set":{"":1}}"#, "An empty update path is not valid."),
            (
                #"{}"#, #"{"$set":{"a..b":1}}"#,
                "The update path 'a..b' contains an empty field name, which is not allowed."
            ),
            (
                #"{"a":[1]}"#, #"{"$set":{"a.$":2}}"#,
                "The positional operator did not find the match needed from the query"
            ),
            (
                #"{"a":[]}"#, #"{"$set":{"a.999999999":1}}"#,
                "The array index 999999999 is too large (at most 100000 past the end)"
            )
        ])
        XCTAssertThrowsError(try MongoModifier(["$set": ["a": 1], "b": 2])) {
            XCTAssertEqual(
                ($0 as? QueryError)?.message, #"Inconsistent operator: {"$set":{"a":1},"b":2}"#)
        }
        XCTAssertThrowsError(try MongoModifier(["$foo": ["a": 1]])) {
            XCTAssertEqual(($0 as? QueryError)?.message, "Invalid modifier specified $foo")
        }
        XCTAssertThrowsError(try MongoModifier(["$bit": ["a": ["and": 1]]]).apply(to: [:])) {
            XCTAssertEqual(($0 as? QueryError)?.message, "$bit is not supported for field 'a'")
        }
    }

    func testThePositionalOperatorFollowsWhereTheSelectorMatched() throws {
        let rows: [(String, String, String, String)] = [
            // (document, selector, modifier, result)
            (#"{"a":[1]}"#, #"{"a.0":1}"#, #"{"$set":{"a.$":5}}"#, #"{"a":[5]}"#),
            (
                #"{"a":[{"x":2},{"x":4}]}"#, #"{"$or":[{"a.x":4}]}"#, #"{"$set":{"a.$.z":9}}"#,
                #"{"a":[{"x":2},{"x":4,"z":9}]}"#
            ),
            (
                #"{"a":[{"x":1},{"x":3}]}"#, #"{"$and":[{"a.x":1},{"a.x":3}]}"#, #"{"$set":{"a.$.x":5}}"#,
                #"{"a":[{"x":1},{"x":5}]}"#
            ),
            (
                #"{"a":[{"x":1},{"y":3}]}"#, #"{"a.x":1,"a.y":3}"#, #"{"$set":{"a.$.z":5}}"#,
                #"{"a":[{"x":1},{"y":3,"z":5}]}"#
            ),
            (
                #"{"a":[{"b":1},{"b":2,"c":3}]}"#, #"{"a":{"$elemMatch":{"b":2}}}"#, #"{"$set":{"a.$.c":4}}"#,
                #"{"a":[{"b":1},{"b":2,"c":4}]}"#
            ),
            (
                #"{"a":[{"b":1},{"b":2}]}"#, #"{"a":{"$elemMatch":{"$or":[{"b":2},{"b":5}]}}}"#,
                #"{"$set":{"a.$.c":4}}"#, #"{"a":[{"b":1},{"b":2,"c":4}]}"#
            )
        ]
        for (documentText, selectorText, modifierText, expectedText) in rows {
            guard case .object(let document) = try EJSON.parse(documentText) else { return XCTFail() }
            let selector = try MongoSelector(EJSON.parse(selectorText))
            XCTAssertTrue(selector.matches(document), selectorText)
            let result = try MongoModifier(EJSON.parse(modifierText)).apply(
                to: document, arrayIndices: selector.arrayIndices(in: document))
            XCTAssertEqual(
                EJSONValue.object(result), try EJSON.parse(expectedText), "\(modifierText) with \(selectorText)")
        }
        // An inverted condition ($ne, $nin, $not) names no element.
        XCTAssertNil(try MongoSelector(["a.0": ["$ne": 2]]).arrayIndices(in: ["a": [1]]))
    }

    func testAnUpsertBuildsItsDocumentFromTheSelectorsEqualities() throws {
        let rows: [(String, String, String)] = [
            (#"{"a":{"$all":["bar"]}}"#, #"{"$set":{"c":"foo"}}"#, #"{"a":"bar","c":"foo"}"#),
            (#"{"a":{"$exists":true,"$eq":"foo"}}"#, #"{"$set":{"c":"foo"}}"#, #"{"a":"foo","c":"foo"}"#),
            (
                #"{"$and":[{"a.a":"foo"},{"$or":[{"a.b":"baz"}]}]}"#, #"{"$set":{"c":"foo"}}"#,
                #"{"a":{"a":"foo","b":"baz"},"c":"foo"}"#
            ),
            (#"{"a":{"$regexp":"x","$flags":""},"b":1}"#, #"{"$inc":{"n":1}}"#, #"{"b":1,"n":1}"#),
            (#"{"a":12}"#, #"{"$setOnInsert":{"_id":"test"}}"#, #"{"_id":"test","a":12}"#),
            (#"{"_id":"x","a":1}"#, #"{"b":2}"#, #"{"_id":"x","b":2}"#)
        ]
        for (selectorText, modifierText, expectedText) in rows {
            let document = try MongoSelector(EJSON.parse(selectorText)).upsertDocument(
                applying: MongoModifier(EJSON.parse(modifierText)))
            XCTAssertEqual(
                EJSONValue.object(document), try EJSON.parse(expectedText), "\(modifierText) upserting \(selectorText)")
        }
        XCTAssertThrowsError(
            try MongoSelector(["a": 1, "a.b": 2]).upsertDocument(applying: MongoModifier(["$set": ["c": 1]]))
        ) {
            XCTAssertEqual(
                ($0 as? QueryError)?.message, "cannot infer query fields to set, both paths 'a' and 'a.b' are matched")
        }
    }

    func testThePositionalOperatorUsesTheMatchedIndex() throws {
        let result = try MongoModifier(["$set": ["a.$.b": 9]]).apply(to: ["a": [["b": 1], ["b": 2]]], arrayIndices: [1])
        XCTAssertEqual(result["a"], [["b": 1], ["b": 9]])
        XCTAssertThrowsError(
            try MongoModifier(["$set": ["a.$.b.$": 9]]).apply(to: ["a": [["b": [1]]]], arrayIndices: [0])
        ) {
            XCTAssertEqual(($0 as? QueryError)?.message, "Too many positional (i.e. '$') elements")
        }
    }
}
