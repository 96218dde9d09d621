import EJSON
import Foundation
import XCTest

@_spi(Storage) @testable import MeteorDDP

/// Packed fields read back from a file: what the cache wrote validates and comes back equal; anything cut short or
/// changed gives a typed error, never a read out of bounds.
final class PackedFieldsValidatorTests: XCTestCase {
    private let fields: EJSONObject = [
        "name": "Ada", "n": 42, "x": 1.5, "neg": -7, "nan": .number(.nan),
        "when": .date(millisecondsSince1970: 1_700_000_000_000),
        "bin": .binary(Data([0, 1, 2, 255])), "re": .regularExpression(pattern: "a+", flags: "gi"), "nil": .null,
        "yes": true,
        "list": [1, "two", ["three": [3, [4]]], [], [:]], "nested": ["deep": ["deeper": ["deepest": "!"]]],
        "custom": .custom(type: "point", value: ["x": 1, "y": 2])
    ]

    private func packed(_ document: Document) -> [UInt8] { document.withBytes { Array($0) } }

    func testWhatTheCacheWritesValidatesAndComesBackEqual() throws {
        let document = Document(id: "ada", fields: fields)
        let bytes = packed(document)
        let restored = try bytes.withUnsafeBytes { try Document(id: "ada", validatingPackedFields: $0) }
        XCTAssertEqual(restored, document)
        XCTAssertEqual(restored.fieldCount, fields.count)
        XCTAssertEqual(restored.fields["list"], fields["list"])
    }

    func testEveryTruncationIsRejected() {
        let bytes = packed(Document(id: "ada", fields: fields))
        for length in 0..<bytes.count {
            let prefix = Array(bytes[..<length])
            // A prefix that ends exactly between two top-level fields is a valid, shorter document.
            if let document = try? prefix.withUnsafeBytes({ try Document(id: "ada", validatingPackedFields: $0) }) {
                XCTAssertLessThan(document.fieldCount, fields.count)
                _ = document.fields
            }
        }
        XCTAssertThrowsError(
            try Array(bytes.dropLast()).withUnsafeBytes { try Document(id: "ada", validatingPackedFields: $0) })
    }

    func testChangedBytesNeverCrashAndWhatPassesDecodes() {
        let bytes = packed(Document(id: "ada", fields: fields))
        var generator = SystemRandomNumberGenerator()
        var rejected = 0
        for _ in 0..<20_000 {
            var changed = bytes
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                changed[Int.random(in: 0..<changed.count, using: &generator)] = UInt8.random(
                    in: 0...255, using: &generator)
            }
            do {
                let document = try changed.withUnsafeBytes { try Document(id: "x", validatingPackedFields: $0) }
                // Whatever passes is structurally sound: reading every field stays in bounds.
                _ = document.fields
                _ = EJSON.stringify(.object(document.fields))
            } catch {
                rejected += 1
            }
        }
        XCTAssertGreaterThan(rejected, 1_000)
    }

    func testInputsTheFuzzerFoundAreRefused() {
        let inputs: [[UInt8]] = [
            [0, 0, 0, 0], // two fields named "": a repeated name (decoded, it would lose one)
            [0, 7, 0, 0, 0, 0, 0], // an object whose field count runs past its own byte count
            [1, 0xC3, 0], // a name that is not UTF-8
            [1, 0x61, 4, 0x80, 0] // an integer varint not in its shortest form
        ]
        for input in inputs {
            XCTAssertThrowsError(
                try input.withUnsafeBytes { try Document(id: "x", validatingPackedFields: $0) }, "\(input)")
        }
    }

    func testNestingDeeperThanTheLimitIsRejected() {
        var value: EJSONValue = "bottom"
        for _ in 0..<(PackedFieldsValidator.maximumDepth + 1) { value = [value] }
        let bytes = packed(Document(id: "deep", fields: ["v": value]))
        XCTAssertThrowsError(try bytes.withUnsafeBytes { try Document(id: "deep", validatingPackedFields: $0) })
    }
}
