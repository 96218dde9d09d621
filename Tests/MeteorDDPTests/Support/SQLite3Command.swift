import Foundation
import XCTest

/// Changes a store's file behind the library's back with the `sqlite3` command (waiting up to 10 s for locks a
/// connection of the test may still hold); skips the test where the command is not installed.
func runSQLite3(on file: URL, _ sql: String, file callerFile: StaticString = #filePath, line: UInt = #line) throws {
    let command = "/usr/bin/sqlite3"
    guard FileManager.default.isExecutableFile(atPath: command) else { throw XCTSkip("no sqlite3 command") }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: command)
    process.arguments = ["-cmd", ".timeout 10000", file.path, sql]
    try process.run()
    process.waitUntilExit()
    XCTAssertEqual(process.terminationStatus, 0, "sqlite3 \(sql)", file: callerFile, line: line)
}
