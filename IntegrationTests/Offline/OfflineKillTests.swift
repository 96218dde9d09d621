import DDPTestServer
import EJSON
import Foundation
import MeteorDDP
import XCTest

/// The offline store under SIGKILL, with real processes: `OfflineProbe` makes stub calls (offline, or connected to
/// DDPTestServer) and is killed at a random point (before, during or after a durable write); a second probe restores
/// the same store, reconnects and prints what it ends with. Whatever the kill point:
/// - the first read after launch shows every restored call's stub effect;
/// - nothing durable is lost: every call up to the last one the probe saw flushed to disk (`durable N`), or up to the
///   last restored one (calls become durable in order, and leave the store only once completed), is restored or ran
///   on the server;
/// - restored calls are calls that were made, in order, and each reaches the server exactly once: its outcome is
///   `succeeded` (run now, or run before the kill with its answer on disk), or `alreadyApplied` when it had run
///   before the kill and was sent again (the server rejects the second insert);
/// - the cache ends equal to the server, and the only notifications are stub effects rolled back (calls that never
///   became durable, so were never sent).
///
/// `MDDP_KILL_ROUNDS` sets the number of rounds (default 20: half offline, half online); each round's
/// kill point is printed.
final class OfflineKillTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("offline-kill-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    func testEveryKillPointRestoresAConsistentStoreAndEachDurableCallRunsOnce() async throws {
        let rounds = ProcessInfo.processInfo.environment["MDDP_KILL_ROUNDS"].flatMap(Int.init) ?? 20
        var tally: [String: Int] = [:]
        for round in 0..<rounds {
            for (key, count) in try await killAndVerify(round: round, online: round % 2 == 1) { tally[key, default: 0] += count }
        }
        print("OfflineKillTests: \(rounds) rounds: \(tally.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
    }

    /// Returns what the round saw (restored calls by outcome, effects rolled back), for the tally.
    private func killAndVerify(round: Int, online: Bool) async throws -> [String: Int] {
        var generator = SystemRandomNumberGenerator()
        let calls = 30
        let killAfter = Int.random(in: 0...calls, using: &generator)
        let delayMicroseconds = UInt32.random(in: 0...3_000, using: &generator)
        let label = "round \(round) (\(online ? "online" : "offline"), killed \(delayMicroseconds) µs after call \(killAfter))"
        print("OfflineKillTests: \(label)")

        let server = DDPTestServer()
        try await server.start()
        server.publish("items") { _ in [Cursor(collection: "items")] }
        server.method("addItem") { context in
            let id = context.randomID(forSequence: "/collection/items")
            _ = try context.collection("items").insert(["n": context.params.first ?? .null], id: id)
            return nil
        }
        server.perform { _ = server.collection("items") }
        let store = directory.appendingPathComponent("round-\(round).sqlite").path

        // The first run, killed.
        let writer = try ProbeProcess([online ? "online" : "offline", store, String(calls)] + (online ? [String(server.port)] : []))
        defer { writer.kill() } // also when a wait below throws
        if killAfter > 0 {
            try writer.waitForLine(timeout: 60) { $0 == "called \(killAfter)" }
        } else {
            try writer.waitForLine(timeout: 60) { _ in true } // started
        }
        // The kill point's random offset past that line (fault injection: nothing is waited for).
        usleep(delayMicroseconds)
        writer.kill()
        // What the killed process had already written to its socket still reaches the server: the server has done
        // with it once the session is gone and its queue has run everything the session handed it.
        try await withTimeout(10, "the killed client's session closed") { await server.waitUntilNoSession() }
        let before = items(server)

        // The second run: restore, reconnect, report.
        let verifier = try ProbeProcess(["verify", store, String(server.port)])
        defer { verifier.kill() }
        try verifier.waitForLine(timeout: 60) { $0.hasPrefix("notified ") }
        let lines = verifier.lines
        verifier.kill()
        let after = items(server)
        try await server.stop()

        let restored = try XCTUnwrap(json(lines, "restored "), label)
        let restoredCalls = (restored["calls"]?.arrayValue ?? []).compactMap(\.stringValue)
        let restoredDocs = Dictionary(uniqueKeysWithValues: (restored["docs"]?.arrayValue ?? []).compactMap { doc in
            doc["_id"]?.stringValue.map { ($0, doc["n"]?.doubleValue ?? -1) }
        })
        let restoredNs = restoredCalls.compactMap(Double.init)
        XCTAssertEqual(restoredNs, restoredNs.sorted(), "\(label): restored in call order")
        XCTAssertTrue(restoredNs.allSatisfy { $0 >= 1 && $0 <= Double(calls) }, label)
        for n in restoredNs {
            XCTAssertTrue(restoredDocs.values.contains(n), "\(label): call \(n)'s stub effect is there at the first read")
        }
        // Nothing durable lost: what the probe saw flushed, and every call before a restored one.
        let flushed = writer.lines.compactMap { $0.hasPrefix("durable ") ? Int($0.dropFirst("durable ".count)) : nil }.max() ?? 0
        let accountedFor = Set(restoredNs).union(before.values)
        let mustBeThere = max(flushed, Int(restoredNs.max() ?? 0))
        let lost = (0..<mustBeThere).map { Double($0 + 1) }.filter { !accountedFor.contains($0) }
        XCTAssertEqual(lost, [], "\(label): durable (flushed: \(flushed)) but neither restored nor run on the server")

        // Each restored call: its true outcome.
        let outcomes = Dictionary(uniqueKeysWithValues: lines.filter { $0.hasPrefix("outcome ") }.map { line -> (String, String) in
            let parts = line.split(separator: " ", maxSplits: 2).map(String.init)
            return (parts[1], parts.count > 2 ? parts[2] : "")
        })
        XCTAssertEqual(Set(outcomes.keys), Set(restoredCalls), "\(label): every restored call has an outcome")
        for id in restoredCalls {
            if before.values.contains(Double(id)!) {
                // It ran before the kill: either its answer was on disk (not sent again: `succeeded`), or it was sent
                // again, rejected as a duplicate, and recognised.
                XCTAssertTrue(["succeeded", "alreadyApplied"].contains(outcomes[id]), "\(label): call \(id) ran before the kill: \(outcomes[id] ?? "none")")
            } else {
                XCTAssertEqual(outcomes[id], "succeeded", "\(label): call \(id)")
            }
        }

        // Exactly once on the server; the cache equal to it.
        XCTAssertEqual(after.values.count, Set(after.values).count, "\(label): no call ran twice")
        XCTAssertEqual(Set(after.values), Set(before.values).union(restoredNs), "\(label): what ran before, and the restored calls")
        let cache = try XCTUnwrap(json(lines, "cache "), label)
        let cached = Dictionary(uniqueKeysWithValues: (cache.arrayValue ?? []).compactMap { doc in
            doc["_id"]?.stringValue.map { ($0, doc["n"]?.doubleValue ?? -1) }
        })
        XCTAssertEqual(cached, after, "\(label): the cache equals the server")

        // Notifications only for stub effects rolled back.
        let notified = (try XCTUnwrap(json(lines, "notified "), label).arrayValue ?? []).compactMap(\.stringValue)
        let rolledBack = Set(restoredDocs.keys).subtracting(after.keys)
        XCTAssertTrue(Set(notified).isSubset(of: rolledBack), "\(label): notified \(notified), rolled back \(rolledBack)")

        var seen = ["calls made before the kill": lines.isEmpty ? 0 : writer.lines.filter { $0.hasPrefix("called ") }.count,
                    "calls seen flushed before the kill": flushed,
                    "stub effects rolled back": rolledBack.count]
        for (id, outcome) in outcomes {
            let ranBefore = before.values.contains(Double(id)!)
            seen["restored, \(outcome)\(ranBefore && outcome == "succeeded" ? " (answer on disk)" : "")", default: 0] += 1
        }
        return seen
    }

    private func items(_ server: DDPTestServer) -> [String: Double] {
        server.perform {
            Dictionary(uniqueKeysWithValues: server.collection("items").find().map { ($0.id, $0.fields["n"]?.doubleValue ?? -1) })
        }
    }

    private func json(_ lines: [String], _ prefix: String) -> EJSONValue? {
        lines.first { $0.hasPrefix(prefix) }.flatMap { try? EJSON.parse(String($0.dropFirst(prefix.count))) }
    }
}

/// A running `OfflineProbe`, its output read line by line.
///
/// A thread of its own reads the probe's output with blocking reads until end of file (the probe exited or was
/// killed); ``kill()`` waits for that end before returning, so the pipe is closed only once nothing reads it. (Not
/// Foundation's `readabilityHandler`: its dispatch source can outlive the handle and read a reused descriptor.)
final class ProbeProcess: @unchecked Sendable {
    // @unchecked because `output` and `finished` are protected by `condition`.
    private let process = Process()
    private let condition = NSCondition()
    private var output = ""
    private var finished = false

    /// The probe next to the test bundle (SwiftPM builds it because IntegrationTests depends on it).
    static var executable: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("OfflineProbe")
    }

    init(_ arguments: [String]) throws {
        process.executableURL = Self.executable
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.standardError
        try process.run()
        let reader = Thread { [self] in readUntilEndOfFile(pipe.fileHandleForReading) }
        reader.name = "OfflineProbe output"
        reader.start()
    }

    private func readUntilEndOfFile(_ handle: FileHandle) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(handle.fileDescriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            condition.lock()
            if count > 0 { output += String(decoding: buffer[..<count], as: UTF8.self) } else { finished = true }
            condition.broadcast()
            condition.unlock()
            if count <= 0 { break }
        }
        try? handle.close()
    }

    /// The complete lines printed so far.
    var lines: [String] {
        condition.lock()
        defer { condition.unlock() }
        return output.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
    }

    /// Waits (with a deadline) until a printed line satisfies `predicate`.
    func waitForLine(timeout: Double, _ predicate: (String) -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while true {
            let complete = output.split(separator: "\n", omittingEmptySubsequences: true).dropLast(output.hasSuffix("\n") ? 0 : 1)
            if complete.contains(where: { predicate(String($0)) }) { return }
            if finished { throw TimedOut(what: "the probe ended without the line; it printed: \(output)") }
            if !condition.wait(until: deadline) { throw TimedOut(what: "a line from the probe; it printed: \(output)") }
        }
    }

    /// SIGKILL: no cleanup, no flush, nothing. Returns once the probe has exited and its output is read to the end.
    func kill() {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        let deadline = Date().addingTimeInterval(10)
        condition.lock()
        defer { condition.unlock() }
        while !finished && condition.wait(until: deadline) {}
    }
}
