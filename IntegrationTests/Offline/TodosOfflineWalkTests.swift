import Foundation
import XCTest

/// The README's offline walk with the Todos example, run as it is written: three processes on one store, the second
/// offline. The todos added offline are shown at once by the third run, before it connects, and its restored calls
/// are confirmed by the server with the ids their stubs gave the todos.
final class TodosOfflineWalkTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("todos-walk-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    /// The example next to the test bundle (SwiftPM builds it because IntegrationTests depends on it).
    private var todos: URL {
        let folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let product = folder.appendingPathComponent("todos")
        return FileManager.default.isExecutableFile(atPath: product.path)
            ? product : folder.appendingPathComponent("Todos")
    }

    private var scripts: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("Examples/Todos/offline")
    }

    /// Runs the example to its end (its scripts end with `quit`) and returns its output.
    private func run(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = todos
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Reading to the end returns once the process has exited (or closed its output).
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, text)
        return text
    }

    func testTheREADMEWalkShowsOfflineTodosAtOnceAndSendsThemWithTheirIDs() throws {
        let store = directory.appendingPathComponent("todos.sqlite").path
        let first = try run(["--store", store, "--script", scripts.appendingPathComponent("1-online.txt").path])
        XCTAssertTrue(first.contains("restored 0 documents and 0 unanswered calls"), first)
        XCTAssertTrue(first.contains("list1-todo2: Groceries: second thing"), first)

        let second = try run([
            "--store", store, "--offline", "--script", scripts.appendingPathComponent("2-offline.txt").path
        ])
        XCTAssertTrue(
            second.contains("restored 4 documents and 0 unanswered calls"),
            "list1's cached todos and the two lists: \(second)")
        XCTAssertFalse(second.contains("connected to"), second)
        // The ids the stubs gave the two todos.
        let stubIDs = second.split(separator: "\n").compactMap { line -> String? in
            guard line.contains("todos.insert applied by its stub"), let quote = line.range(of: "(returned \"") else {
                return nil
            }
            return String(line[quote.upperBound...].prefix { $0 != "\"" })
        }
        XCTAssertEqual(stubIDs.count, 2, second)

        let third = try run(["--store", store, "--script", scripts.appendingPathComponent("3-back-online.txt").path])
        XCTAssertTrue(third.contains("restored 6 documents and 2 unanswered calls"), third)
        let connected = try XCTUnwrap(third.range(of: "connected to"), third)
        let beforeConnecting = third[..<connected.lowerBound]
        XCTAssertTrue(
            beforeConnecting.contains("list list1: Groceries (public, 4 open)"),
            "shown at once, before connecting: \(third)")
        for (index, id) in stubIDs.enumerated() {
            XCTAssertTrue(
                third.contains("server: restored call todos.insert (id \(index + 1)) confirmed (result \"\(id)\")"),
                "sent with its id and seed: the server made the stub's id \(id): \(third)")
            XCTAssertTrue(third.contains("[ ] \(id): "), third)
        }
        XCTAssertTrue(third.contains("every restored call has its outcome (2 in all)"), third)
    }
}
