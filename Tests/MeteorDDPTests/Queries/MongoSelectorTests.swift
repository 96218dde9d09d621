import EJSON
import XCTest

@testable import MeteorDDP

/// Selector semantics as minimongo has them (packages/minimongo, selector_compiler tests), written as our own cases:
/// each row is `(selector, document, matches)` in EJSON text.
final class MongoSelectorTests: XCTestCase {
    private func check(_ rows: [(String, String, Bool)], file: StaticString = #filePath, line: UInt = #line) throws {
        for (selectorText, documentText, expected) in rows {
            let selector = try MongoSelector(EJSON.parse(selectorText))
            guard case .object(let fields) = try EJSON.parse(documentText) else {
                return XCTFail("not an object: \(documentText)")
            }
            let id = fields["_id"]?.stringValue ?? "doc"
            let document = Document(id: id, fields: fields.filter { $0.key != "_id" })
            XCTAssertEqual(
                selector.matches(document), expected, "\(selectorText) on \(documentText)", file: file, line: line)
            var withID = fields
            if withID["_id"] == nil { withID["_id"] = "doc" }
            XCTAssertEqual(
                selector.matches(withID), expected, "\(selectorText) on \(documentText) as EJSON", file: file,
                line: line)
        }
    }

    func testEqualityNullAndMissing() throws {
        try check([
            (#"{}"#, #"{}"#, true),
            (#"{"a":12}"#, #"{"a":12}"#, true),
            (#"{"a":12}"#, #"{"a":13}"#, false),
            (#"{"a":12}"#, #"{"b":12}"#, false),
            (#"{"a":12,"b":13}"#, #"{"a":12,"b":13,"c":1}"#, true),
            (#"{"a":12,"b":13}"#, #"{"a":12}"#, false),
            (#"{"a":"x"}"#, #"{"a":"x"}"#, true),
            (#"{"a":null}"#, #"{}"#, true),
            (#"{"a":null}"#, #"{"a":null}"#, true),
            (#"{"a":null}"#, #"{"a":0}"#, false),
            (#"{"a":null}"#, #"{"a":[1,null]}"#, true),
            (#"{"a.b":null}"#, #"{"a":[{"b":1},{"c":2}]}"#, true),
            (#"{"a.b":null}"#, #"{"a":[{"b":1},{"b":2}]}"#, false),
            (#"{"a":{"b":1,"c":2}}"#, #"{"a":{"b":1,"c":2}}"#, true),
            (#"{"a":{"b":1,"c":2}}"#, #"{"a":{"c":2,"b":1}}"#, false),
            (#"{"a":[1,2]}"#, #"{"a":[1,2]}"#, true),
            (#"{"a":[1,2]}"#, #"{"a":[[1,2],3]}"#, true),
            (#"{"a":[1,2]}"#, #"{"a":[2,1]}"#, false),
            (#"{"a":1}"#, #"{"a":[0,1,2]}"#, true),
            (#"{"a":{"$date":5}}"#, #"{"a":{"$date":5}}"#, true),
            (#"{"a":{"$binary":"AQI="}}"#, #"{"a":{"$binary":"AQI="}}"#, true),
            (#"{"_id":"x"}"#, #"{"_id":"x"}"#, true),
            (#""x""#, #"{"_id":"x"}"#, true),
            (#""x""#, #"{"_id":"y"}"#, false),
            (#"{"_id":""}"#, #"{"_id":""}"#, false),
            (#"{"_id":null}"#, #"{}"#, false),
            (#"false"#, #"{"a":1}"#, false),
            (#"null"#, #"{"a":1}"#, false)
        ])
    }

    func testComparisonsKeepToTheirTypeBracket() throws {
        try check([
            (#"{"a":{"$gt":10}}"#, #"{"a":11}"#, true),
            (#"{"a":{"$gt":10}}"#, #"{"a":10}"#, false),
            (#"{"a":{"$gte":10}}"#, #"{"a":10}"#, true),
            (#"{"a":{"$lt":10}}"#, #"{"a":"1"}"#, false),
            (#"{"a":{"$lt":"b"}}"#, #"{"a":"a"}"#, true),
            (#"{"a":{"$lt":"b"}}"#, #"{"a":1}"#, false),
            (#"{"a":{"$gt":10}}"#, #"{"a":[1,20]}"#, true),
            (#"{"a":{"$gt":10,"$lt":15}}"#, #"{"a":[5,20]}"#, true),
            (#"{"a":{"$gt":10,"$lt":15}}"#, #"{"a":12}"#, true),
            (#"{"a":{"$lte":null}}"#, #"{}"#, true),
            (#"{"a":{"$lt":null}}"#, #"{}"#, false),
            (#"{"a":{"$gt":[1]}}"#, #"{"a":[2]}"#, false),
            (#"{"a":{"$gt":{"$date":5}}}"#, #"{"a":{"$date":6}}"#, true),
            (#"{"a":{"$gt":{"$date":5}}}"#, #"{"a":6}"#, false),
            (#"{"a":{"$lt":{"x":2}}}"#, #"{"a":{"x":1}}"#, true),
            (#"{"a":{"$eq":1}}"#, #"{"a":[1,2]}"#, true),
            (#"{"a":{"$ne":1}}"#, #"{"a":[1,2]}"#, false),
            (#"{"a":{"$ne":1}}"#, #"{"a":[2,3]}"#, true),
            (#"{"a":{"$ne":1}}"#, #"{}"#, true),
            (#"{"a":{"$ne":null}}"#, #"{}"#, false),
            (#"{"a":{"$in":[1,2]}}"#, #"{"a":2}"#, true),
            (#"{"a":{"$in":[1,2]}}"#, #"{"a":[3,2]}"#, true),
            (#"{"a":{"$in":[1,2]}}"#, #"{"a":3}"#, false),
            // A few strings are compared one by one, more are looked up in a set: the same answers either way.
            (#"{"a":{"$in":["x","yy",1]}}"#, #"{"a":"yy"}"#, true),
            (#"{"a":{"$in":["x","yy",1]}}"#, #"{"a":["z","x"]}"#, true),
            (#"{"a":{"$in":["x","yy",1]}}"#, #"{"a":"y"}"#, false),
            (#"{"a":{"$in":["x","yy",1]}}"#, #"{"a":1}"#, true),
            (#"{"a":{"$in":["s0","s1","s2","s3","s4","s5","s6","s7","s8","s9"]}}"#, #"{"a":"s9"}"#, true),
            (#"{"a":{"$in":["s0","s1","s2","s3","s4","s5","s6","s7","s8","s9"]}}"#, #"{"a":["q","s0"]}"#, true),
            (#"{"a":{"$in":["s0","s1","s2","s3","s4","s5","s6","s7","s8","s9"]}}"#, #"{"a":"s10"}"#, false),
            (#"{"a":{"$in":[null]}}"#, #"{}"#, true),
            (#"{"a":{"$in":[{"$regexp":"^x","$flags":""}]}}"#, #"{"a":"xy"}"#, true),
            (#"{"a":{"$in":[{"b":1}]}}"#, #"{"a":{"b":1}}"#, true),
            (#"{"a":{"$nin":[1,2]}}"#, #"{"a":3}"#, true),
            (#"{"a":{"$nin":[1,2]}}"#, #"{"a":[3,1]}"#, false),
            (#"{"a":{"$nin":[1,2]}}"#, #"{}"#, true)
        ])
    }

    func testLogicalOperators() throws {
        try check([
            (#"{"$or":[{"a":1},{"b":2}]}"#, #"{"b":2}"#, true),
            (#"{"$or":[{"a":1},{"b":2}]}"#, #"{"c":3}"#, false),
            (#"{"$and":[{"a":1},{"b":2}]}"#, #"{"a":1,"b":2}"#, true),
            (#"{"$and":[{"a":1},{"b":2}]}"#, #"{"a":1}"#, false),
            (#"{"$nor":[{"a":1},{"b":2}]}"#, #"{"a":2}"#, true),
            (#"{"$nor":[{"a":1},{"b":2}]}"#, #"{"b":2}"#, false),
            (#"{"a":{"$not":{"$gt":5}}}"#, #"{"a":3}"#, true),
            (#"{"a":{"$not":{"$gt":5}}}"#, #"{"a":"x"}"#, true),
            (#"{"a":{"$not":{"$gt":5}}}"#, #"{"a":7}"#, false),
            (#"{"a":{"$not":{"$regexp":"^x","$flags":""}}}"#, #"{"a":"ya"}"#, true),
            (#"{"x":1,"$or":[{"a":1},{"b":1}]}"#, #"{"x":1,"b":1}"#, true),
            (#"{"x":1,"$or":[{"a":1},{"b":1}]}"#, #"{"x":2,"b":1}"#, false),
            (#"{"$comment":"anything"}"#, #"{"a":1}"#, true)
        ])
    }

    func testElementAndEvaluationOperators() throws {
        try check([
            (#"{"a":{"$exists":true}}"#, #"{"a":null}"#, true),
            (#"{"a":{"$exists":true}}"#, #"{}"#, false),
            (#"{"a":{"$exists":false}}"#, #"{}"#, true),
            (#"{"a":{"$exists":0}}"#, #"{"a":1}"#, false),
            (#"{"a.b":{"$exists":true}}"#, #"{"a":[{"c":1},{"b":2}]}"#, true),
            (#"{"a":{"$type":2}}"#, #"{"a":"x"}"#, true),
            (#"{"a":{"$type":"string"}}"#, #"{"a":["x"]}"#, true),
            (#"{"a":{"$type":4}}"#, #"{"a":[1]}"#, false),
            (#"{"a":{"$type":4}}"#, #"{"a":[[1]]}"#, true),
            (#"{"a":{"$type":"null"}}"#, #"{"a":null}"#, true),
            (#"{"a":{"$type":"date"}}"#, #"{"a":{"$date":1}}"#, true),
            (#"{"a":{"$type":"regex"}}"#, #"{"a":{"$regexp":"x","$flags":""}}"#, true),
            (#"{"a":{"$mod":[10,1]}}"#, #"{"a":11}"#, true),
            (#"{"a":{"$mod":[10,1]}}"#, #"{"a":12}"#, false),
            (#"{"a":{"$mod":[10,1]}}"#, #"{"a":[10,21]}"#, true),
            (#"{"a":{"$regex":"^a"}}"#, #"{"a":"abc"}"#, true),
            (#"{"a":{"$regex":"^A"}}"#, #"{"a":"abc"}"#, false),
            (#"{"a":{"$regex":"^A","$options":"i"}}"#, #"{"a":"abc"}"#, true),
            (#"{"a":{"$regex":"^b","$options":"m"}}"#, #"{"a":"a\nb"}"#, true),
            (#"{"a":{"$regex":"^b"}}"#, #"{"a":"a\nb"}"#, false),
            (#"{"a":{"$regex":"","$options":"i"}}"#, #"{"a":"anything"}"#, true),
            (#"{"a":{"$regexp":"","$flags":""}}"#, #"{"a":""}"#, true),
            (#"{"a":{"$regexp":"b","$flags":"i"}}"#, #"{"a":["x","ABC"]}"#, true),
            (#"{"a":{"$regexp":"b","$flags":"i"}}"#, #"{"a":1}"#, false),
            (#"{"a":{"$regexp":"b","$flags":"i"}}"#, #"{"a":{"$regexp":"b","$flags":"i"}}"#, true),
            (#"{"a":{"$regexp":"b","$flags":"i"}}"#, #"{"a":{"$regexp":"b","$flags":""}}"#, false)
        ])
    }

    func testArraysAndDottedPaths() throws {
        try check([
            (#"{"a.b":1}"#, #"{"a":{"b":1}}"#, true),
            (#"{"a.b":1}"#, #"{"a":[{"b":2},{"b":1}]}"#, true),
            (#"{"a.b":1}"#, #"{"a":[{"b":[2,1]}]}"#, true),
            (#"{"a.b.c":1}"#, #"{"a":[{"b":[{"c":1}]}]}"#, true),
            (#"{"a.1":"y"}"#, #"{"a":["x","y"]}"#, true),
            (#"{"a.1":"y"}"#, #"{"a":["y","x"]}"#, false),
            (#"{"a.0.b":1}"#, #"{"a":[{"b":1}]}"#, true),
            (#"{"a.1":5}"#, #"{"a":[{"1":5}]}"#, true),
            (#"{"a.b":1}"#, #"{"a":1}"#, false),
            (#"{"a":{"$size":2}}"#, #"{"a":[1,2]}"#, true),
            (#"{"a":{"$size":1}}"#, #"{"a":[[1,2]]}"#, true),
            (#"{"a":{"$size":2}}"#, #"{"a":[[1,2]]}"#, false),
            (#"{"a":{"$size":0}}"#, #"{"a":"x"}"#, false),
            (#"{"a":{"$all":[1,2]}}"#, #"{"a":[2,3,1]}"#, true),
            (#"{"a":{"$all":[1,2]}}"#, #"{"a":[2,3]}"#, false),
            (#"{"a":{"$all":[]}}"#, #"{"a":[]}"#, false),
            (#"{"a":{"$all":[[1]]}}"#, #"{"a":[[1],2]}"#, true),
            (#"{"a":{"$elemMatch":{"b":1,"c":2}}}"#, #"{"a":[{"b":1,"c":3},{"b":1,"c":2}]}"#, true),
            (#"{"a":{"$elemMatch":{"b":1,"c":2}}}"#, #"{"a":[{"b":1},{"c":2}]}"#, false),
            (#"{"a":{"$elemMatch":{"$gt":5,"$lt":8}}}"#, #"{"a":[3,6,9]}"#, true),
            (#"{"a":{"$elemMatch":{"$gt":5,"$lt":8}}}"#, #"{"a":[3,9]}"#, false),
            (#"{"a":{"$elemMatch":{"b":1}}}"#, #"{"a":[2,{"b":1}]}"#, false),
            (#"{"a":{"$elemMatch":{"$or":[{"b":1},{"c":1}]}}}"#, #"{"a":[{"c":1}]}"#, true),
            (#"{"a.b":{"$elemMatch":{"$eq":2}}}"#, #"{"a":[{"b":[1,2]}]}"#, true)
        ])
    }

    func testInvalidSelectorsGiveMinimongosReasons() {
        let cases: [(String, String)] = [
            (#"{"a":{"$gt":1,"b":2}}"#, #"Inconsistent operator: {"$gt":1,"b":2}"#),
            (#"{"$foo":1}"#, "Unrecognized logical operator: $foo"),
            (#"{"a":{"$foo":1}}"#, "Unrecognized operator: $foo"),
            (#"{"$or":[]}"#, "$and/$or/$nor must be nonempty array"),
            (#"{"$and":[1]}"#, "$or/$and/$nor entries need to be full objects"),
            (#"{"a":{"$in":1}}"#, "$in needs an array"),
            (#"{"a":{"$in":[{"$gt":1}]}}"#, "cannot nest $ under $in"),
            (#"{"a":{"$all":1}}"#, "$all requires array"),
            (#"{"a":{"$all":[{"$gt":1}]}}"#, "no $ expressions in $all"),
            (#"{"a":{"$mod":[1]}}"#, "argument to $mod must be an array of two numbers"),
            (#"{"a":{"$size":true}}"#, "$size needs a number"),
            (#"{"a":{"$type":"foo"}}"#, "unknown string alias for $type: foo"),
            (#"{"a":{"$type":0}}"#, "Invalid numerical $type code: 0"),
            (#"{"a":{"$type":true}}"#, "argument to $type is not a number or a string"),
            (#"{"a":{"$options":"i"}}"#, "$options needs a $regex"),
            (#"{"a":{"$regex":"x","$options":"s"}}"#, "Only the i, m, and g regexp options are supported"),
            (#"{"a":{"$regex":1}}"#, "$regex has to be a string or RegExp"),
            (#"{"a":{"$elemMatch":1}}"#, "$elemMatch need an object"),
            (#"[1]"#, "Invalid selector: 1"),
            (#"[1,2]"#, "Invalid selector: 1,2"),
            (#"[[1,null],"a"]"#, "Invalid selector: 1,,a"),
            (#"{"$binary":"AQI="}"#, "Invalid selector: 1,2"),
            (#"true"#, "Invalid selector: true")
        ]
        for (selector, message) in cases {
            XCTAssertThrowsError(try MongoSelector(EJSON.parse(selector)), selector) { error in
                XCTAssertEqual((error as? QueryError)?.message, message, selector)
            }
        }
        XCTAssertThrowsError(try MongoSelector(["a": ["$regex": "("]])) { error in
            XCTAssertTrue((error as? QueryError)?.message.hasPrefix("Invalid regular expression") == true, "\(error)")
        }
    }
}
