import EJSON
import Foundation
import TestSupport
import XCTest

@_spi(Storage) @testable import MeteorDDP

/// The packed decoding of `added` and `changed` (``DocumentMessageDecoder``) against the general path (EJSON.parse,
/// ``ServerMessage``, then packing): for every frame of every corpus, either the fast path declines and the frame reads
/// exactly as before (the same message, or the same violation), or it takes the frame and gives the same message with
/// byte-identical packed fields.
final class DocumentMessageDecoderTests: XCTestCase {
    private struct Tally {
        var fast = 0
        var general = 0
    }

    /// One scratch for every frame a test checks, as a connection's frames share one: each frame also reads the same
    /// through it (the collection name it keeps from the frame before included).
    private let connectionScratch = DocumentMessageDecoder.Scratch()

    /// Checks one frame; returns whether the fast path took it.
    @discardableResult
    private func check(
        _ frame: String, _ label: @autoclosure () -> String, file: StaticString = #filePath, line: UInt = #line
    ) -> Bool {
        let general = DDPClient.parseGenerally(frame)
        let shared = DocumentMessageDecoder.decode(frame, scratch: connectionScratch)
        guard let fast = DocumentMessageDecoder.decode(frame) else {
            XCTAssertNil(shared, label(), file: file, line: line)
            // Declined: the client reads the frame with the general parser, errors included.
            switch (DDPClient.parse(frame), general) {
            case (.success(.message(let read)), .success(let expected)):
                XCTAssertEqual(read, expected, label(), file: file, line: line)
            case (.failure(let read), .failure(let expected)):
                XCTAssertEqual(read, expected, label(), file: file, line: line)
            case (let read, let expected):
                XCTFail("\(label()): read \(read), the general parser \(expected)", file: file, line: line)
            }
            return false
        }
        // Taken: the same message as the general path, with byte-identical packed fields.
        XCTAssertNil(DocumentMessageDecoding.disagreement(frame), label(), file: file, line: line)
        XCTAssertEqual(shared?.serverMessage, fast.serverMessage, label(), file: file, line: line)
        XCTAssertEqual(shared?.key, fast.key, label(), file: file, line: line)
        if case .success(let expected) = general, case .added(_, let id, _) = expected {
            XCTAssertEqual(fast.key.documentID, MongoID.documentID(fromWire: id), label(), file: file, line: line)
        }
        return true
    }

    private static func added(fields: String, id: String = "x") -> String {
        #"{"msg":"added","collection":"c","id":"\#(id)","fields":\#(fields)}"#
    }

    // MARK: - Corpora

    func testMeteorsTranscriptsReadTheSameAndTheirDataMessagesTakeTheFastPath() throws {
        var tally = Tally()
        for (scenario, direction, frame) in try Fixtures.transcriptFrames() where direction == "S->C" {
            if check(frame, "\(scenario): \(frame)") { tally.fast += 1 } else { tally.general += 1 }
        }
        XCTAssertGreaterThan(tally.fast, 5, "Meteor's own added/changed frames take the fast path")
        XCTAssertGreaterThan(tally.general, 5)
    }

    func testEveryEJSONVectorAsAFieldValueReadsTheSame() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("EJSONTests/Fixtures/ejson.json")
        let vectors = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        var texts: [String] = []
        for entry in vectors["stringify"] as? [[String: Any]] ?? [] {
            texts += [entry["stringify"], entry["canonical"]].compactMap { $0 as? String }
        }
        for entry in vectors["parse"] as? [[String: Any]] ?? [] {
            texts += [entry["input"]].compactMap { $0 as? String }
        }
        for entry in vectors["equals"] as? [[String: Any]] ?? [] {
            texts += [entry["a"], entry["b"]].compactMap { $0 as? String }
        }
        XCTAssertGreaterThan(texts.count, 40)
        var fast = 0
        for text in texts {
            if check(Self.added(fields: #"{"v":\#(text)}"#), text) { fast += 1 }
            check(#"{"msg":"changed","collection":"c","id":"x","fields":{"v":\#(text),"w":1},"cleared":["z"]}"#, text)
        }
        XCTAssertGreaterThan(fast, 10)
    }

    func testTheFuzzCorpusReadsTheSame() throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
                "Fuzz/Corpus/FuzzServerMessage")
        let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
        XCTAssertGreaterThan(files.count, 5)
        for file in files {
            let frame = String(decoding: try Data(contentsOf: file), as: UTF8.self)
            check(frame, file.lastPathComponent)
            // Every prefix: truncated frames are the general parser's to report.
            for length in stride(from: 0, to: frame.utf8.count, by: 3) {
                check(
                    String(decoding: Array(frame.utf8.prefix(length)), as: UTF8.self),
                    "\(file.lastPathComponent) cut at \(length)")
            }
        }
    }

    func testGeneratedDocumentsOfEveryShapeReadTheSameAndTakeTheFastPath() {
        var generator = SplitMix64(seed: 0x5eed)
        for n in 0..<2_000 {
            var fields = EJSONObject()
            for f in 0..<generator.next(below: 12) {
                fields["f\(f)\(generator.next(below: 3) == 0 ? " with.dots-and_marks" : "")"] = randomValue(
                    &generator, depth: 0)
            }
            let frame = EJSON.stringify([
                "msg": "added", "collection": "items", "id": .string("id\(n)"), "fields": .object(fields)
            ])
            XCTAssertTrue(
                check(frame, frame), "a Meteor-shaped frame of plain values and dates takes the fast path: \(frame)")
            // A non-ASCII name: the general parser's frame, read as before.
            var accented = fields
            accented["é\u{1F600}"] = .number(Double(n))
            XCTAssertFalse(
                check(
                    EJSON.stringify([
                        "msg": "added", "collection": "items", "id": .string("id\(n)"), "fields": .object(accented)
                    ]), "accented"))
            let cleared: EJSONValue = .array((0..<generator.next(below: 3)).map { .string("f\($0)") })
            let changed = EJSON.stringify([
                "msg": "changed", "collection": "items", "id": .string("id\(n)"), "fields": .object(fields),
                "cleared": cleared
            ])
            XCTAssertTrue(check(changed, changed))
        }
    }

    private func randomValue(_ generator: inout SplitMix64, depth: Int) -> EJSONValue {
        switch generator.next(below: depth > 3 ? 7 : 9) {
        case 0: return .null
        case 1: return .bool(generator.next(below: 2) == 0)
        case 2: return .number(Double(Int(generator.next(below: 2_000_000)) - 1_000_000))
        case 3:
            let numbers: [Double] = [
                0.25, -1.5e-7, 1e21, 123_456_789_012_345_680, 9_007_199_254_740_994, -0.0, 0.1,
                .greatestFiniteMagnitude, .leastNonzeroMagnitude
            ]
            return .number(numbers[Int(generator.next(below: UInt64(numbers.count)))])
        case 4:
            let strings = [
                "", "plain", "quote \" backslash \\ slash /", "tab\tnew\nline\u{1}", "ünïcødé", "emoji \u{1F600}",
                "\u{2028}\u{2029}"
            ]
            return .string(strings[Int(generator.next(below: UInt64(strings.count)))])
        case 5:
            return .date(millisecondsSince1970: Double(generator.next(below: 4_000_000_000_000)) - 1_000_000_000_000)
        case 6: return .string(String(repeating: "x", count: Int(generator.next(below: 300))))
        case 7:
            // Now and then more than 127 elements (a two-byte count); small otherwise (the shapes nest).
            let count =
                depth == 0 && generator.next(below: 4) == 0 ? 130 + generator.next(below: 70) : generator.next(below: 6)
            return .array((0..<count).map { _ in randomValue(&generator, depth: depth + 1) })
        default:
            var object = EJSONObject()
            for k in 0..<generator.next(below: 6) { object["k\(k)"] = randomValue(&generator, depth: depth + 1) }
            return .object(object)
        }
    }

    // MARK: - Frames the fast path declines

    func testEveryBadInputRowAndEveryUnusualFrameReadsExactlyAsTheGeneralParserReadsIt() {
        let frames = [
            // The README's bad-input table.
            #"{"msg":"added","collection":"c","id":"1","fields":{"s":"\ud800"}}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{"n":1e400}}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{"t":{"$type":"unregistered","$value":1}}}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{"a":[1,2}}"#,
            #"{"msg":"added","collection":"c","id":1,"fields":{}}"#,
            #"{"msg":"added","collection":"c","fields":{}}"#,
            #"{"msg":"added","id":"1","fields":{}}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":[]}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{"$date":5}}"#,
            #"{"msg":"changed","collection":"c","id":"1","cleared":[1]}"#,
            #"{"msg":"changed","collection":"c","id":"1","cleared":"a"}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{"d":"# + String(repeating: "[", count: 600)
                + String(repeating: "]", count: 600) + "}}",
            #"{"msg":"added","collection":"c","id":"1","fields":{"d":"# + String(repeating: "[", count: 300)
                + String(repeating: "]", count: 300) + "}}",
            // EJSON types other than dates, escapes, duplicate and `$` keys: the general parser's to read.
            #"{"msg":"added","collection":"c","id":"1","fields":{"b":{"$binary":"AAEC"},"i":{"$InfNaN":-1}}}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{"e":{"$escape":{"$date":1}}}}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{"r":{"$regexp":"a+","$flags":"gi"}}}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{"d":{"$date":"soon"}}}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":"#
                + #"{"d":{"$date":1.9}, "e":{"$date":-0.5}, "f":{ "$date" : 7 }}}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{"\u0024date":1}}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{"o":{"\u0024date":1}}}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{"a":1,"a":2}}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{"o":{"k":1,"\u006b":2}}}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{"a":1},"fields":{"b":2}}"#,
            #"{"msg":"added","msg":"changed","collection":"c","id":"1"}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":null,"cleared":5}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{},"extra":true}"#,
            #"{"msg":"added","collection":"c","id":"-abc","fields":{}}"#,
            #"{"msg":"added","collection":"c","id":"~{\"n\":1}","fields":{}}"#,
            #"{"msg":"changed","collection":"c","id":"1","fields":{"a":1,"b":null},"cleared":["a","c"]}"#,
            #"{"msg":"changed","collection":"c","id":"1"}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{"s":"a\u00e9\ud83d\ude00\/\b\f\r"}}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{"s":"\x"}}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{"n":-}}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{"n":01}}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{"n":1.}}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{"n":12345678901234567890}}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{"n":tru}}"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{}} x"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{}}  "#,
            #"{"msg":"added" , "collection" : "c" , "id" : "1" , "fields" : { "a" : [ 1 , { } ] } }"#,
            #"{"msg":"added","collection":"c","id":"1","fields":{"a":"ctl\#u{1}"}}"#,
            #"{"msg":"addedBefore","collection":"c","id":"1","fields":{},"before":null}"#,
            #"{"msg":"changedX","collection":"c","id":"1"}"#,
            #"{"msg":"ready","subs":["a"]}"#,
            "{\"msg\":\"added\"",
            ""
        ]
        for frame in frames { check(frame, frame) }
        // Past the fast path's limit of fields per object: read by the general parser.
        let limit = DocumentMessageDecoder.maximumFieldsPerObject
        let wide = (0...limit).map { #""f\#($0)":\#($0)"# }.joined(separator: ",")
        XCTAssertFalse(check(Self.added(fields: "{\(wide)}"), "\(limit + 1) fields"))
        let narrow = (0..<limit).map { #""f\#($0)":\#($0)"# }.joined(separator: ",")
        XCTAssertTrue(check(Self.added(fields: "{\(narrow)}"), "\(limit) fields"))
    }

    func testCanonicallyEquivalentNamesAreOneFieldAsTheGeneralParserReadsThem() {
        // Swift's String equality (the general parser's objects) merges "K" and KELVIN SIGN, "é" and "e" + accent.
        for fields in [#"{"K":1,"\u212a":2}"#, #"{"\u00e9":1,"e\u0301":2}"#, #"{"o":{"K":1,"\u212a":2}}"#, #"{"ü":1}"#]
        {
            XCTAssertFalse(
                check(Self.added(fields: fields), fields), "names with non-ASCII characters take the general path")
            check(#"{"msg":"changed","collection":"c","id":"x","fields":\#(fields)}"#, fields)
        }
        // Non-ASCII values are the fast path's.
        XCTAssertTrue(check(Self.added(fields: #"{"name":"K\u212aé"}"#), "non-ASCII value"))
    }

    func testDecodesSharingAScratchAtOnceEachReadTheirOwnFrame() {
        // A transport delivers a connection's frames one at a time; if two decodes overlap anyway, neither may write
        // into the other's memory.
        let scratch = DocumentMessageDecoder.Scratch()
        let frames = (0..<64).map { n in
            Self.added(
                fields: "{"
                    + (0..<(n % 3 + 1) * 40).map { #""f\#($0)":"\#(String(repeating: "v", count: n))""# }.joined(
                        separator: ",") + "}", id: "d\(n)")
        }
        DispatchQueue.concurrentPerform(iterations: 4_000) { round in
            let frame = frames[round % frames.count]
            let decoded = DocumentMessageDecoder.decode(frame, scratch: scratch)
            guard
                case .success(.added(_, let id, let fields))? = decoded.map({
                    Result<ServerMessage, Never>.success($0.serverMessage)
                }),
                case .success(.added(_, id, let expected)) = DDPClient.parseGenerally(frame), fields == expected
            else {
                XCTFail("round \(round): \(String(describing: decoded?.serverMessage))")
                return
            }
        }
    }

    func testACollectionNameKeptFromTheFrameBeforeIsReusedOnlyForTheSameName() {
        // One connection's frames: the same name again, written with an escape, a name one byte longer or differing in
        // its last byte, the empty name, names past the kept length (never kept), non-ASCII names.
        let long = String(repeating: "c", count: RecentName.maximumBytes)
        let names = [
            #"items"#, #"items"#, #"it\u0065ms"#, #"\u0069tems"#, #"itemss"#, #"itemz"#, #"item"#, #""#, #"items"#,
            long, long + "c",
            long + "c", long, #"élan"#, #"\u00e9lan"#, #"items"#, String(repeating: "x", count: 300), #"items"#
        ]
        for (n, name) in names.enumerated() {
            let frame = #"{"msg":"changed","collection":"\#(name)","id":"d\#(n)","fields":{"n":\#(n)}}"#
            guard case .success(.changed(let collection, _, _, _)) = DDPClient.parseGenerally(frame) else {
                return XCTFail("frame \(n) does not parse")
            }
            XCTAssertTrue(check(frame, "frame \(n)"))
            XCTAssertEqual(
                DocumentMessageDecoder.decode(frame, scratch: connectionScratch)?.key.collectionName, collection,
                "frame \(n)")
        }
    }

    func testAScratchGivesBackTheMemoryOfALargeFrame() {
        let scratch = DocumentMessageDecoder.Scratch()
        let large = Self.added(fields: #"{"s":"\#(String(repeating: "x", count: 4 << 20))"}"#)
        XCTAssertTrue(check(large, "4 MiB string"))
        XCTAssertNotNil(DocumentMessageDecoder.decode(large, scratch: scratch))
        XCTAssertLessThanOrEqual(scratch.packed.capacity, DocumentMessageDecoder.Scratch.keptBytes)
    }

    func testAnArrayOrObjectOfMoreThan127ElementsHasItsCountWrittenInFull() {
        let elements = (0..<20_000).map { "\($0 % 50)" }.joined(separator: ",")
        XCTAssertTrue(
            check(Self.added(fields: #"{"a":[\#(elements)],"b":[[\#(elements)],{"x":[\#(elements)]}]}"#), "long arrays")
        )
    }

    // MARK: - Strings read eight bytes at a time

    func testTheWordScanFindsTheFirstQuoteBackslashOrControlCharacter() {
        func isSpecial(_ byte: UInt8) -> Bool { byte == 0x22 || byte == 0x5C || byte < 0x20 }
        func word(_ bytes: [UInt8]) -> UInt64 {
            bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
        }
        // Every byte value at every position of a word of plain letters.
        for position in 0..<8 {
            for value in 0...255 {
                var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: 8)
                bytes[position] = UInt8(value)
                XCTAssertEqual(
                    DocumentMessageDecoder.firstStringSpecialByte(word(bytes)), isSpecial(UInt8(value)) ? position : 8,
                    "byte \(value) at \(position)")
            }
        }
        // Random words (mostly several special bytes, some with borrows across bytes) against a byte-by-byte reading.
        var generator = SplitMix64(seed: 0xb17e5)
        for _ in 0..<100_000 {
            let bytes = (0..<8).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            XCTAssertEqual(
                DocumentMessageDecoder.firstStringSpecialByte(word(bytes)), bytes.firstIndex(where: isSpecial) ?? 8,
                "\(bytes)")
        }
    }

    func testAnEscapeAControlCharacterOrANonASCIICharacterAtAnyOffsetOfALongStringReadsTheSame() {
        let run = String(repeating: "abcdefgh", count: 5)
        for offset in 0...run.count {
            let head = String(run.prefix(offset))
            let tail = String(run.dropFirst(offset))
            for inserted in [#"\""#, #"\\"#, #"\n"#, #"\u00e9"#, "é", "\u{1F600}", "\u{7F}"] {
                XCTAssertTrue(
                    check(Self.added(fields: #"{"s":"\#(head)\#(inserted)\#(tail)"}"#), "\(inserted) at \(offset)"))
            }
            // A raw control character is malformed JSON: declined, and the general parser's error.
            XCTAssertFalse(
                check(Self.added(fields: "{\"s\":\"\(head)\u{1}\(tail)\"}"), "control character at \(offset)"))
            // The frame ends inside the string.
            XCTAssertFalse(
                check(#"{"msg":"added","collection":"c","id":"x","fields":{"s":"\#(head)"#, "unterminated at \(offset)")
            )
        }
    }
}
