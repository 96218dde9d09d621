import DDPTestServer
import EJSON
import Foundation
import MeteorDDP
import XCTest

/// The offline store under SIGKILL, with real processes: `OfflineProbe` makes stub calls (offline, or connected to
/// DDPTestServer, which keeps a lost socket's session for Meteor 3.5's grace period and goes on running what it
/// received) and is killed at a random point (before, during or after a durable write); a second probe restores the
/// same store, reconnects (a new session) and prints what it ends with. Whatever the kill point:
/// - the first read after launch shows every restored call's stub effect;
/// - nothing durable is lost: every call up to the last one the probe saw flushed to disk (`durable N`), or up to the
///   last restored one (calls become durable in order, and leave the store only once completed), is restored or ran
///   on the server;
/// - restored calls are calls that were made, in order; each `addItem` reaches the server exactly once and its outcome
///   is the truth: `alreadyApplied` exactly when it had run before the kill and was sent again (the server rejects
///   the second insert and has what its stub set, a later `bump` of the same item notwithstanding), `succeeded`
///   otherwise (run now, or before the kill with its answer on disk); every restored `bump` succeeds (a `bump` may
///   run twice: DDP re-sends at least once);
/// - the cache ends equal to the server (items and bump counts), and the only notifications are stub effects rolled
///   back (calls that never became durable, so were never sent);
/// - every fifth round, a client that logged out is killed the moment `logout()` returned: its store holds nothing of
///   the user's (no items, no subscriptions, no calls); in every third, the restoring run is killed too (0–20 ms after
///   its first read) and a third run checks all of the above;
/// - every fourth round, an online one makes its calls right after `connect()` and `subscribe()`, without waiting for
///   the subscription: the first calls reach the server before it (queued calls go first, as in Meteor), so their
///   `updated` comes before their documents, and the cache shows the server's version (none yet) while the calls are
///   still on disk; the first read after the kill must show their effects all the same. A call that went out before
///   the subscription and completed (its `updated` came) before the kill left the cache without its item (the
///   server's version, none yet, as Meteor's client shows it): the run after the kill is notified when the item
///   arrives with the subscription, a real change of what the client knew of the server.
///
/// `MDDP_KILL_ROUNDS` sets the number of rounds (default 20: offline, online and logout rounds); each round's kill
/// point is printed. `MDDP_KILL_EARLY_ONLY=1` makes every round that is not a logout one an online-early one (to
/// reproduce a failure of theirs).
final class OfflineKillTests: XCTestCase {
    /// The text of the items a logout round's probe makes (Tests/OfflineProbe says the same).
    static let privateNote = "ada-private-note-4471"

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
        let earlyOnly = ProcessInfo.processInfo.environment["MDDP_KILL_EARLY_ONLY"] == "1"
        var tally: [String: Int] = [:]
        for round in 0..<rounds {
            // Offline, online, and every fifth round a logout killed at once.
            let seen =
                round % 5 == 4
                ? try await killAfterLogout(round: round)
                : try await killAndVerify(round: round, online: earlyOnly || round % 2 == 1, earlyOnly: earlyOnly)
            for (key, count) in seen { tally[key, default: 0] += count }
        }
        let counts = tally.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        print("OfflineKillTests: \(rounds) rounds: \(counts)")
    }

    private func startServer() async throws -> DDPTestServer {
        // Meteor 3.5+'s default: a killed client's session waits in its grace period (a restarted process cannot
        // resume it: it starts a new session) and goes on running the calls its socket delivered. The classification
        // below reads the server's items once those have run (`waitUntilSessionsIdle()`).
        let server = DDPTestServer(configuration: DDPTestServer.Configuration())
        try await server.start()
        server.createUser(username: "ada-lovelace-1815", password: "secret")
        server.publish("items") { _ in [Cursor(collection: "items")] }
        // The same items as a logged-in user's own: a logged-out client sees none.
        server.publish("myItems") { context in context.userID == nil ? [] : [Cursor(collection: "items")] }
        server.method("addItem") { context in
            let id = context.randomID(forSequence: "/collection/items")
            var fields: EJSONObject = ["n": context.params.first ?? .null, "c": 0]
            if context.params.count > 1 { fields["note"] = context.params[1] }
            _ = try context.collection("items").insert(fields, id: id)
            return .string(id)
        }
        server.method("bump") { context in
            guard let id = context.params.first?.stringValue else {
                throw MeteorError(error: .number(400), reason: "Match failed")
            }
            return .number(Double(try context.collection("items").update(id, ["$inc": ["c": 1]])))
        }
        server.perform { _ = server.collection("items") }
        return server
    }

    /// A writer killed right after `logout()` returned: the store keeps nothing of the user's.
    private func killAfterLogout(round: Int) async throws -> [String: Int] {
        let label = "round \(round) (logout)"
        print("OfflineKillTests: \(label)")
        let server = try await startServer()
        let store = directory.appendingPathComponent("round-\(round).sqlite")
        let writer = try ProbeProcess(["logout", store.path, "9", String(server.port)])
        defer { writer.kill() }
        try writer.waitForLine(timeout: 60) { $0 == "logged out" }
        writer.kill()
        try await server.stop()
        // No byte of it in any file of the store (the -wal and -shm too), as the killed process left them (opening
        // the store below checkpoints its log): the user's name and the items' notes.
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path)
        where name.hasPrefix(store.lastPathComponent) {
            let bytes = try Data(contentsOf: directory.appendingPathComponent(name))
            for secret in ["ada-lovelace-1815", OfflineKillTests.privateNote] {
                XCTAssertNil(bytes.range(of: Data(secret.utf8)), "\(label): \(secret) is still in \(name)")
            }
        }
        let stored = try SQLiteStore(fileURL: store).load()
        XCTAssertEqual(
            stored.documents.filter { $0.key.collectionName == "items" }.map(\.key), [],
            "\(label): the user's items are erased")
        XCTAssertEqual(stored.subscriptions, [], "\(label): and the subscriptions")
        XCTAssertEqual(stored.methods.map(\.name), [], "\(label): and the calls (all completed)")
        return ["logouts killed at once, nothing of the user's left": 1]
    }

    /// Returns what the round saw (restored calls by outcome, effects rolled back), for the tally.
    private func killAndVerify(round: Int, online: Bool, earlyOnly: Bool) async throws -> [String: Int] {
        var generator = SystemRandomNumberGenerator()
        let calls = 30
        let killAfter = Int.random(in: 0...calls, using: &generator)
        let delayMicroseconds = UInt32.random(in: 0...3_000, using: &generator)
        // Every fourth round (online): calls made without waiting for the subscription.
        let early = online && (earlyOnly || round % 4 == 3)
        let mode = online ? (early ? "online-early" : "online") : "offline"
        // Calls made before the subscription: its data comes 0–60 ms after their `updated` (a slow publication), the
        // window in which the cache shows the server's version (none) of what their stubs inserted.
        let subscriptionLatency = early ? Int.random(in: 0...60, using: &generator) : 0
        let label: String =
            "round \(round) (\(mode)\(early ? ", data \(subscriptionLatency) ms late" : ""), "
            + "killed \(delayMicroseconds) µs after call \(killAfter)\(round % 3 == 2 ? ", then while restoring" : ""))"
        print("OfflineKillTests: \(label)")

        let server = try await startServer()
        server.subscriptionLatency = .milliseconds(subscriptionLatency)
        let store = directory.appendingPathComponent("round-\(round).sqlite").path

        // The first run, killed.
        let writer = try ProbeProcess([mode, store, String(calls)] + (online ? [String(server.port)] : []))
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
        try await withTimeout(10, "the killed client's calls ran") { await server.waitUntilSessionsIdle() }
        let killedSessionsInGracePeriod = server.sessionsInGracePeriod
        // The items whose addItem reached the server before the killed run's subscription: their `updated` could come
        // before their data.
        let writerMessages = server.receivedMessages
        let subscribedAt = writerMessages.firstIndex { $0.name == "sub" } ?? writerMessages.endIndex
        let sentBeforeSubscription = Set(
            writerMessages[..<subscribedAt].compactMap { message -> Double? in
                guard case .method(_, "addItem", let params, _) = message else { return nil }
                return params.first?.doubleValue
            })
        server.subscriptionLatency = .zero
        var killedTwice = false
        if round % 3 == 2 {
            // Killed a second time, while restoring: the restored run is itself killed somewhere between its first read
            // and its outcomes (re-sent calls answered or not, their answers on disk or not).
            let restorer = try ProbeProcess(["verify", store, String(server.port)])
            defer { restorer.kill() }
            try restorer.waitForLine(timeout: 60) { $0.hasPrefix("restored ") }
            usleep(UInt32.random(in: 0...20_000, using: &generator))
            restorer.kill()
            try await withTimeout(10, "the second killed client's session closed") { await server.waitUntilNoSession() }
            try await withTimeout(10, "the second killed client's calls ran") { await server.waitUntilSessionsIdle() }
            killedTwice = true
        }
        let before = items(server)

        // The second run: restore, reconnect, report.
        let verifier = try ProbeProcess(["verify", store, String(server.port)])
        defer { verifier.kill() }
        try verifier.waitForLine(timeout: 60) { $0.hasPrefix("notified ") }
        let lines = verifier.lines
        verifier.kill()
        let after = items(server)
        let afterBumps = bumps(server)
        try await server.stop()

        let restored = try XCTUnwrap(json(lines, "restored "), label)
        // Restored calls: [id, name, first parameter] (addItem's n, bump's item id).
        let restoredCalls = (restored["calls"]?.arrayValue ?? []).compactMap {
            entry -> (id: String, name: String, param: EJSONValue)? in
            guard let id = entry[0]?.stringValue, let name = entry[1]?.stringValue else { return nil }
            return (id, name, entry[2] ?? .null)
        }
        let restoredDocs = Dictionary(
            uniqueKeysWithValues: (restored["docs"]?.arrayValue ?? []).compactMap { doc in
                doc["_id"]?.stringValue.map { ($0, doc["n"]?.doubleValue ?? -1) }
            })
        let restoredIDs = restoredCalls.compactMap { Int($0.id) }
        XCTAssertEqual(restoredIDs, restoredIDs.sorted(), "\(label): restored in call order")
        let restoredNs = restoredCalls.filter { $0.name == "addItem" }.compactMap { $0.param.doubleValue }
        XCTAssertTrue(restoredNs.allSatisfy { $0 >= 1 && $0 <= Double(calls) }, label)
        for n in restoredNs {
            XCTAssertTrue(
                restoredDocs.values.contains(n), "\(label): call \(n)'s stub effect is there at the first read")
        }
        // Nothing durable lost: what the probe saw flushed, and every call before a restored one.
        let flushed =
            writer.lines.compactMap { $0.hasPrefix("durable ") ? Int($0.dropFirst("durable ".count)) : nil }.max() ?? 0
        let accountedFor = Set(restoredNs).union(before.values)
        let mustBeThere = max(flushed, Int(restoredNs.max() ?? 0))
        let lost = (0..<mustBeThere).map { Double($0 + 1) }.filter { !accountedFor.contains($0) }
        XCTAssertEqual(lost, [], "\(label): durable (flushed: \(flushed)) but neither restored nor run on the server")

        // Each restored call: its true outcome, and how it was decided. An addItem is applied on the server exactly
        // when it ran before the kill (the server then has the n its stub set): alreadyApplied if sent again (a
        // duplicate), succeeded if its answer was on disk. A bump always succeeds: its item was inserted before it.
        let outcomes = Dictionary(
            uniqueKeysWithValues: lines.filter { $0.hasPrefix("outcome ") }.map {
                line -> (String, (kind: String, source: String)) in
                let parts = line.split(separator: " ").map(String.init)
                return (parts[1], (parts.count > 2 ? parts[2] : "", parts.count > 3 ? parts[3] : ""))
            })
        XCTAssertEqual(Set(outcomes.keys), Set(restoredCalls.map(\.id)), "\(label): every restored call has an outcome")
        var seen = [
            "calls made before the kill": lines.isEmpty ? 0 : writer.lines.filter { $0.hasPrefix("called ") }.count,
            "calls seen flushed before the kill": flushed,
            "killed sessions left waiting in their grace period": killedSessionsInGracePeriod
        ]
        for call in restoredCalls {
            guard let outcome = outcomes[call.id] else { continue }
            if call.name == "addItem", let n = call.param.doubleValue, before.values.contains(n) {
                // Sent again: refused as a duplicate, and recognised. From a saved answer: the answer of the run that
                // had sent it, a success, or (killed twice) the refusal of a re-send, recognised too.
                let expected = outcome.source == "savedAnswer" ? ["succeeded", "alreadyApplied"] : ["alreadyApplied"]
                XCTAssertTrue(
                    expected.contains(outcome.kind),
                    "\(label): addItem \(n) ran before the kill: \(outcome.kind) (\(outcome.source))")
            } else {
                XCTAssertEqual(outcome.kind, "succeeded", "\(label): \(call.name) \(call.id) (\(outcome.source))")
            }
            seen["restored \(call.name), \(outcome.kind) (\(outcome.source))", default: 0] += 1
        }

        // Exactly once on the server (addItem; a bump may run twice: DDP re-sends at least once); the cache equal to
        // it.
        XCTAssertEqual(after.values.count, Set(after.values).count, "\(label): no addItem ran twice")
        XCTAssertEqual(
            Set(after.values), Set(before.values).union(restoredNs), "\(label): what ran before, and the restored calls"
        )
        let cache = try XCTUnwrap(json(lines, "cache "), label)
        let cached = Dictionary(
            uniqueKeysWithValues: (cache.arrayValue ?? []).compactMap { doc in
                doc["_id"]?.stringValue.map { ($0, doc["n"]?.doubleValue ?? -1) }
            })
        XCTAssertEqual(cached, after, "\(label): the cache equals the server")
        let cachedBumps = Dictionary(
            uniqueKeysWithValues: (cache.arrayValue ?? []).compactMap { doc in
                doc["_id"]?.stringValue.map { ($0, doc["c"]?.doubleValue ?? -1) }
            })
        XCTAssertEqual(cachedBumps, afterBumps, "\(label): the cache's bump counts equal the server's")

        // Notifications only for stub effects rolled back, and for items a re-sent bump changed once more on the
        // server (it had run before the kill: a real change of the server's state).
        let notified = (try XCTUnwrap(json(lines, "notified "), label).arrayValue ?? []).compactMap(\.stringValue)
        let rolledBack = Set(restoredDocs.keys).subtracting(after.keys)
        let restoredBumps = Dictionary(
            uniqueKeysWithValues: (restored["docs"]?.arrayValue ?? []).compactMap { doc in
                doc["_id"]?.stringValue.map { ($0, doc["c"]?.doubleValue ?? -1) }
            })
        let bumpedAgain = Set(
            restoredBumps.keys.filter { key in afterBumps[key].map { $0 > restoredBumps[key]! } ?? false })
        // A bump whose stub's write reached the disk in the batch before its call's record, then the kill: its effect
        // is restored without the call, and rolled back to the server's count.
        let bumpRolledBack = Set(
            restoredBumps.keys.filter { key in afterBumps[key].map { $0 < restoredBumps[key]! } ?? false })
        // An item whose call went out before the subscription and completed before the kill, before its data came:
        // not in the restored cache, it arrives with the subscription.
        let arrivedWithSubscription = Set(
            after.filter { key, n in sentBeforeSubscription.contains(n) && restoredDocs[key] == nil }.keys)
        let explained = rolledBack.union(bumpRolledBack).union(bumpedAgain).union(arrivedWithSubscription)
        let unexplained = Set(notified).subtracting(explained).sorted().map { key in
            let show = { (value: Double?) in value.map { "\($0)" } ?? "none" }
            return "\(key) (restored n \(show(restoredDocs[key])) c \(show(restoredBumps[key])), on the server n "
                + "\(show(after[key])) c \(show(afterBumps[key])), before the kill n \(show(before[key])))"
        }
        XCTAssertEqual(
            unexplained, [],
            "\(label): notified \(notified), rolled back \(rolledBack.union(bumpRolledBack)), "
                + "bumped again on the server \(bumpedAgain), arrived with the subscription \(arrivedWithSubscription)"
        )
        seen["items notified as they arrived with the subscription (call completed before the kill)"] =
            Set(notified).intersection(arrivedWithSubscription).count
        seen["stub effects rolled back"] = rolledBack.count + bumpRolledBack.count
        if killedTwice { seen["rounds killed a second time while restoring"] = 1 }
        if early {
            seen["rounds making calls before their subscription was ready"] = 1
            // The calls made before the probe said the subscription was ready (all of them if it never was).
            let writerLines = writer.lines
            let subscribedAt = writerLines.firstIndex(of: "subscribed") ?? writerLines.endIndex
            seen["calls made before their subscription was ready"] =
                writerLines[..<subscribedAt].filter { $0.hasPrefix("called ") }.count
        }
        seen["items a re-sent bump ran on again (at least once)"] = bumpedAgain.count
        return seen
    }

    private func bumps(_ server: DDPTestServer) -> [String: Double] {
        server.perform {
            Dictionary(
                uniqueKeysWithValues: server.collection("items").find().map {
                    ($0.id, $0.fields["c"]?.doubleValue ?? -1)
                })
        }
    }

    private func items(_ server: DDPTestServer) -> [String: Double] {
        server.perform {
            Dictionary(
                uniqueKeysWithValues: server.collection("items").find().map {
                    ($0.id, $0.fields["n"]?.doubleValue ?? -1)
                })
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
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(
            "OfflineProbe")
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
            let complete = output.split(separator: "\n", omittingEmptySubsequences: true).dropLast(
                output.hasSuffix("\n") ? 0 : 1)
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
