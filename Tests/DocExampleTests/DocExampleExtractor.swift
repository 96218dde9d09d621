import Foundation

/// Finds every Swift code example in the package's documentation (doc comments of `Sources`, the DocC articles and
/// the README) and writes them as one Swift file whose functions hold them, so `swift build --build-tests` compiles
/// every example a reader may copy.
///
/// Each example becomes the body of a function, inside a `do` block below the names examples take for granted
/// (`client`, `database`, …; see `DocExamplePrelude`): an example may declare its own `client` (it shadows the
/// prelude's), local types, closures and loops. Examples that use SwiftUI compile against SwiftUI where it exists, and
/// against the shapes of its API in `DocExampleSwiftUI` elsewhere (Linux): every example is compiled everywhere.
enum DocExampleExtractor {
    struct Example {
        let source: String
        let line: Int
        let code: [String]

        /// Why the example is not compiled, when its first or last line says so (`// not compiled: <reason>`; the
        /// last line for a manifest, whose first line must be its tools version): a manifest, a fragment that cannot
        /// stand alone. Listed in the generated file.
        var notCompiledReason: String? {
            for line in [code.first, code.last].compactMap({ $0?.trimmingCharacters(in: .whitespaces) })
            where line.hasPrefix(Self.notCompiledMarker) {
                return String(line.dropFirst(Self.notCompiledMarker.count)).trimmingCharacters(in: .whitespaces)
            }
            return nil
        }

        static let notCompiledMarker = "// not compiled:"
    }

    /// The files that hold examples, relative to the package root.
    static func documentationFiles(root: URL) throws -> [String] {
        var files = ["README.md"]
        let sources = root.appendingPathComponent("Sources")
        let enumerator = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)
        while let url = enumerator?.nextObject() as? URL {
            guard url.pathExtension == "swift" || url.pathExtension == "md" else { continue }
            files.append(String(url.path.dropFirst(root.path.count + 1)))
        }
        return files.sorted()
    }

    /// The examples of one file: ```swift fences in Markdown, `/// ```swift` fences in doc comments.
    static func examples(in text: String, source: String) -> [Example] {
        let isMarkdown = source.hasSuffix(".md")
        var examples: [Example] = []
        var current: [String]?
        var start = 0
        var indent = ""
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var line = String(rawLine)
            if !isMarkdown {
                let trimmed = line.drop { $0 == " " }
                guard trimmed.hasPrefix("///") else {
                    current = nil
                    continue
                }
                line = String(trimmed.dropFirst(3))
            }
            if current == nil {
                let stripped = line.drop { $0 == " " }
                if stripped == "```swift" {
                    current = []
                    start = index + 1
                    indent = String(line.prefix { $0 == " " })
                }
                continue
            }
            if line.drop(while: { $0 == " " }) == "```" {
                examples.append(Example(source: source, line: start, code: current ?? []))
                current = nil
                continue
            }
            current?.append(line.hasPrefix(indent) ? String(line.dropFirst(indent.count)) : line)
        }
        return examples
    }

    /// The generated Swift file for `examples`.
    static func generatedFile(_ examples: [Example]) -> String {
        var imports: Set<String> = [
            "import DDPTestServer", "import Foundation", "import MeteorDDP", "import MeteorDDPTesting", "import XCTest"
        ]
        var functions: [String] = []
        var notCompiled: [String] = []
        for (number, example) in examples.enumerated() {
            if let reason = example.notCompiledReason {
                notCompiled.append("// not compiled: \(example.source):\(example.line): \(reason)")
                continue
            }
            var body: [String] = []
            for line in example.code {
                if line.hasPrefix("import ") { imports.insert(line) } else { body.append(line) }
            }
            var function = ["// \(example.source):\(example.line)"]
            function.append("@MainActor func docExample\(number)(_ prelude: DocExamplePrelude) async throws {")
            function.append(
                "    let (client, database, server, logger, lists, todos) = "
                    + "(prelude.client, prelude.database, prelude.server, prelude.logger, prelude.lists, prelude.todos)"
            )
            function.append("    _ = (client, database, server, logger, lists, todos)")
            function.append("    do {")
            function += body.map { $0.isEmpty ? "" : "        " + $0 }
            function.append("    }")
            function.append("}")
            functions.append(function.joined(separator: "\n"))
        }
        // Modules that exist on some platforms only: imported where they exist (an example using one guards its code
        // with `#if canImport(...)`), SwiftUI's stand-in elsewhere.
        let platformModules = ["SwiftUI", "Observation", "UIKit", "AppKit", "Network"]
        let swiftUIImports = imports.filter { line in platformModules.contains { line == "import \($0)" } }
        let plainImports = imports.subtracting(swiftUIImports).sorted()
        var file = "// Generated by DocExampleTests from the package's documentation: do not edit.\n"
        file += "// Regenerate: Tests/DocExampleTests/update.sh\n"
        file += "// swiftlint:disable all\n// swift-format-ignore-file\n\n"
        if !notCompiled.isEmpty {
            file += "// The examples that say they are not compiled, and why:\n" + notCompiled.joined(separator: "\n")
            file += "\n\n"
        }
        file += plainImports.joined(separator: "\n") + "\n"
        for line in swiftUIImports.sorted() {
            let module = line.replacingOccurrences(of: "import ", with: "")
            // SwiftUI's stand-in where it does not exist; Observation exists wherever Swift 6 does; UIKit, AppKit and
            // Network only on Apple platforms (their examples compile only there).
            let elsewhere = module == "SwiftUI" ? "#else\nimport DocExampleSwiftUI\n" : ""
            file += "#if canImport(\(module))\n\(line)\n\(elsewhere)#endif\n"
        }
        file += "\n" + functions.joined(separator: "\n\n") + "\n"
        return file
    }
}
