import Foundation
import XCTest

/// Every code example in the documentation compiles: they are generated into `DocExamples.generated.swift` (built
/// with this target), and this test fails when that file no longer matches the documentation.
final class DocExampleTests: XCTestCase {
    private var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    private var generatedURL: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "DocExamples.generated.swift")
    }

    func testTheCompiledExamplesAreTheDocumentationsExamples() throws {
        var examples: [DocExampleExtractor.Example] = []
        for file in try DocExampleExtractor.documentationFiles(root: root) {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            examples += DocExampleExtractor.examples(in: text, source: file)
        }
        XCTAssertGreaterThan(examples.count, 50, "the documentation's examples were found")
        let expected = DocExampleExtractor.generatedFile(examples)
        if ProcessInfo.processInfo.environment["UPDATE_DOC_EXAMPLES"] == "1" {
            try expected.write(to: generatedURL, atomically: true, encoding: .utf8)
        }
        let committed = try String(contentsOf: generatedURL, encoding: .utf8)
        XCTAssertTrue(
            committed == expected, "the documentation's examples changed: run Tests/DocExampleTests/update.sh")
    }
}

extension DocExampleTests {
    /// The README's walk-through is Examples/GettingStarted/Walkthrough.swift's code (which CI runs), line for line.
    func testTheReadmesWalkThroughIsTheExamplePrograms() throws {
        let program = try String(
            contentsOf: root.appendingPathComponent("Examples/GettingStarted/Walkthrough.swift"), encoding: .utf8)
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let begin = try XCTUnwrap(program.range(of: "// walk-through: begin\n"))
        let end = try XCTUnwrap(program.range(of: "// walk-through: end"))
        let code = String(program[begin.upperBound..<end.lowerBound])
        let section = try XCTUnwrap(readme.range(of: "## A walk-through\n"))
        let fence = try XCTUnwrap(readme.range(of: "```swift\n", range: section.upperBound..<readme.endIndex))
        let close = try XCTUnwrap(readme.range(of: "\n```\n", range: fence.upperBound..<readme.endIndex))
        XCTAssertEqual(String(readme[fence.upperBound..<close.lowerBound]) + "\n", code)
    }
}
