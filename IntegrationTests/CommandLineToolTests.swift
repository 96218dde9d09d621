import DDPCommandLine
import DDPTestServer
import EJSON
import Foundation
import MeteorDDP
import XCTest

/// The `ddp` tool's interpreter against DDPTestServer, in script mode, its `--json` output parsed back.
final class CommandLineToolTests: XCTestCase {
    private var server: DDPTestServer!

    override func setUp() async throws {
        server = DDPTestServer()
        try await server.start()
        server.publish("players") { _ in [Cursor(collection: "players")] }
        server.method("addPlayer") { context in
            let id = context.randomID(forSequence: "/collection/players")
            try context.collection("players").insert(["name": context.params.first ?? .null, "score": 0], id: id)
            return .string(id)
        }
        server.createUser(username: "ada", password: "secret")
    }

    override func tearDown() async throws {
        try await server.stop()
    }

    /// A client connected to the test server.
    private func connectedClient() async throws -> DDPClient {
        let client = DDPClient(url: server.url)
        client.connect()
        try await client.waitUntilConnected()
        return client
    }

    /// Output that keeps each JSON object printed in `lines`.
    private func jsonOutput(into lines: Locked<[EJSONObject]>) -> CommandOutput {
        CommandOutput(style: .json) { line in
            if case .object(let object)? = try? EJSON.parse(line) { lines.mutate { $0.append(object) } }
        }
    }

    func testAScriptRunsEveryCommandAndPrintsJSONLines() async throws {
        let lines = Locked<[EJSONObject]>([])
        let sawAdded = expectation(description: "the watcher printed the added player")
        let output = CommandOutput(style: .json) { line in
            guard case .object(let object)? = try? EJSON.parse(line) else {
                return XCTFail("not a JSON object: \(line)")
            }
            lines.mutate { $0.append(object) }
            if object["event"] == "added" { sawAdded.fulfill() }
        }
        let client = DDPClient(url: server.url)
        client.connect()
        try await client.waitUntilConnected()
        let session = CommandLineSession(client: client, output: output)
        let script = """
            status
            login --username ada --password secret
            sub players
            watch players '{"name": {"$regex": "^G"}}'
            call addPlayer "Grace Hopper"
            call addPlayer Ada
            list players '{"name": "Ada"}'
            unsub players
            bogus command
            quit
            status
            """
        var ran: [String] = []
        for line in script.split(separator: "\n").map(String.init) {
            ran.append(line)
            guard await session.run(line) else { break }
        }
        XCTAssertEqual(ran.last, "quit", "quit ends the script")
        await fulfillment(of: [sawAdded], timeout: 10)
        session.close()

        let events = lines.value
        let byEvent = { (name: String) in events.filter { $0["event"] == .string(name) } }
        XCTAssertEqual(byEvent("status").first?["connected"], true)
        XCTAssertNotNil(byEvent("login").first?["userId"]?.stringValue)
        XCTAssertEqual(byEvent("ready").first?["name"], "players")
        XCTAssertEqual(byEvent("result").count, 2)
        let graceID = byEvent("result").first?["result"]?.stringValue
        XCTAssertNotNil(graceID)
        // Only Grace matches the watch's selector; its fields are shown before → after.
        let added = byEvent("added")
        XCTAssertEqual(added.count, 1)
        XCTAssertEqual(added.first?["id"]?.stringValue, graceID)
        XCTAssertEqual(added.first?["fields"]?["name"], ["before": .null, "after": "Grace Hopper"])
        XCTAssertEqual(byEvent("document").first?["document"]?["name"], "Ada")
        XCTAssertEqual(byEvent("count").first?["count"], 1)
        XCTAssertEqual(byEvent("unsub").first?["name"], "players")
        XCTAssertEqual(byEvent("error").first?["message"], "unknown command 'bogus' (try help)")
    }

    func testTokensAndArguments() throws {
        XCTAssertEqual(
            try CommandTokenizer.words(#"call  add 1 "two words" '{"a": 1}' it\'s"#),
            ["call", "add", "1", "two words", #"{"a": 1}"#, "it's"])
        XCTAssertEqual(try CommandTokenizer.argument("1"), 1)
        XCTAssertEqual(try CommandTokenizer.argument("true"), true)
        XCTAssertEqual(try CommandTokenizer.argument(#"{"a":1}"#), ["a": 1])
        XCTAssertEqual(try CommandTokenizer.argument("plain"), "plain")
        XCTAssertThrowsError(try CommandTokenizer.words(#"call "open"#))
        // JSON typed as is stays JSON: its double quotes and spaces are kept up to the closing bracket.
        XCTAssertEqual(
            try CommandTokenizer.words(#"list players {"score":{"$gte":30}}"#),
            ["list", "players", #"{"score":{"$gte":30}}"#])
        XCTAssertEqual(
            try CommandTokenizer.words(#"call echo {"a": 1, "b": ["x ]", 2]} [1, 2] 3"#),
            ["call", "echo", #"{"a": 1, "b": ["x ]", 2]}"#, "[1, 2]", "3"])
        XCTAssertThrowsError(try CommandTokenizer.argument(#"{score:{"$gte":30}}"#)) { error in
            XCTAssertTrue("\(error)".hasPrefix("not valid JSON: {score:"), "\(error)")
        }
        XCTAssertThrowsError(try CommandTokenizer.argument(#"{"a": 1"#), "an unclosed object is refused")
    }

    func testJSONTypedWithoutQuotesSelectsWhatItSays() async throws {
        server.perform {
            for (name, score) in [("Ada", 40), ("Grace", 35), ("Alan", 30), ("Edsger", 10)] {
                try! server.collection("players").insert(
                    ["name": .string(name), "score": .number(Double(score))], id: name.lowercased())
            }
        }
        let lines = Locked<[EJSONObject]>([])
        let session = CommandLineSession(client: try await connectedClient(), output: jsonOutput(into: lines))
        _ = await session.run("sub players")
        _ = await session.run(#"list players {"score":{"$gte":30}}"#)
        _ = await session.run(#"list players {score:{"$gte":30}}"#)
        session.close()
        let events = lines.value
        XCTAssertEqual(
            events.filter { $0["event"] == "count" }.map { $0["count"] }, [3],
            "three players match; the typo printed no count")
        let error = events.first { $0["event"] == "error" }?["message"]?.stringValue ?? ""
        XCTAssertTrue(error.hasPrefix("not valid JSON: {score:"), error)
    }

    func testListShowsObjectIDsAsObjectIDs() async throws {
        let id = ObjectID("5f1d7a3c9e1b2a0012345678")!
        server.perform { try! server.collection("things", idGeneration: .objectID).insert(["n": 1], id: id.hexString) }
        server.publish("things") { _ in [Cursor(collection: "things")] }
        let json = Locked<[EJSONObject]>([])
        let text = Locked<[String]>([])
        let client = try await connectedClient()
        let jsonSession = CommandLineSession(client: client, output: jsonOutput(into: json))
        _ = await jsonSession.run("sub things")
        _ = await jsonSession.run(#"list things {"_id": {"$type": "oid", "$value": "5f1d7a3c9e1b2a0012345678"}}"#)
        let textSession = CommandLineSession(
            client: client,
            output: CommandOutput(style: .text(colour: false)) { line in text.mutate { $0.append(line) } })
        _ = await textSession.run("list things")
        jsonSession.close()
        XCTAssertEqual(json.value.first { $0["event"] == "document" }?["document"]?["_id"], id.ejsonValue)
        XCTAssertTrue(text.value.contains { $0.hasPrefix(#"ObjectID("5f1d7a3c9e1b2a0012345678")"#) }, "\(text.value)")
    }

    /// `stats` prints the client's diagnostics; the next `stats` highlights the figures that changed (a collection
    /// that appeared, the calls' latency) and only those.
    func testStatsShowsTheDiagnosticsAndHighlightsWhatChanged() async throws {
        let text = Locked<[String]>([])
        let session = CommandLineSession(
            client: try await connectedClient(),
            output: CommandOutput(style: .text(colour: true)) { line in text.mutate { $0.append(line) } })
        defer { session.close() }
        _ = await session.run("sub players")
        _ = await session.run("stats")
        let first = text.value.last ?? ""
        XCTAssertTrue(first.contains("connected"), first)
        XCTAssertTrue(first.contains("players  ready  0 parameters  1 handle"), first)
        XCTAssertFalse(first.contains("\u{1B}[33m"), "nothing is highlighted the first time: \(first)")

        _ = await session.run(#"call addPlayer "Grace""#)
        _ = await session.run("stats")
        let second = text.value.last ?? ""
        XCTAssertTrue(second.contains("\u{1B}[33m1 document\u{1B}[0m"), "the new collection's count: \(second)")
        XCTAssertTrue(second.contains("\u{1B}[33mover 1 calls\u{1B}[0m"), "the latency appeared: \(second)")
        XCTAssertTrue(second.contains("  retries 0"), "an unchanged figure is plain: \(second)")
        XCTAssertFalse(second.contains("\u{1B}[33mready\u{1B}[0m"), "the subscription did not change: \(second)")
    }

    /// `ddp stats --json`: one JSON object per refresh, the diagnostics snapshot in full.
    func testStatsInJSONPrintsOneSnapshotPerRefresh() async throws {
        let lines = Locked<[EJSONObject]>([])
        let session = CommandLineSession(client: try await connectedClient(), output: jsonOutput(into: lines))
        defer { session.close() }
        _ = await session.run("sub players")
        try await session.showStats(every: .milliseconds(20), times: 3, redraw: false)
        let snapshots = lines.value.filter { $0["event"] == "stats" }.compactMap { $0["diagnostics"] }
        XCTAssertEqual(snapshots.count, 3)
        for snapshot in snapshots {
            XCTAssertEqual(snapshot["connection"]?["state"], "connected")
            XCTAssertEqual(snapshot["subscriptions"]?[0]?["name"], "players")
            XCTAssertEqual(snapshot["subscriptions"]?[0]?["status"], "ready")
            XCTAssertNotNil(snapshot["takenAt"]?.stringValue.flatMap { try? Date($0, strategy: .iso8601) })
        }
    }

    func testTheHelpFitsEightyColumns() {
        for line in CommandLineSession.help.split(separator: "\n") {
            XCTAssertLessThanOrEqual(line.count, 80, String(line))
        }
    }

    func testTheLineEditorEditsAndRecallsHistory() {
        var editor = LineEditor()
        func type(_ bytes: [UInt8]) -> [LineEditor.Outcome] {
            LineEditor.Key.decode(bytes).keys.map { editor.handle($0) }
        }
        // "sub plyers", left ×4, insert "a" → "sub players"; Enter.
        _ = type(
            Array("sub plyers".utf8) + [0x1B, 0x5B, 0x44, 0x1B, 0x5B, 0x44, 0x1B, 0x5B, 0x44, 0x1B, 0x5B, 0x44]
                + Array("a".utf8))
        XCTAssertEqual(editor.line, "sub players")
        XCTAssertEqual(type([0x0D]).last, .line("sub players"))
        _ = type(Array("call x".utf8) + [0x7F]) // backspace
        XCTAssertEqual(type([0x0D]).last, .line("call "))
        // Up recalls the latest line, up again the one before, down comes back, down again the draft.
        _ = type(Array("dra".utf8))
        _ = type([0x1B, 0x5B, 0x41])
        XCTAssertEqual(editor.line, "call ")
        _ = type([0x1B, 0x5B, 0x41])
        XCTAssertEqual(editor.line, "sub players")
        _ = type([0x1B, 0x5B, 0x42, 0x1B, 0x5B, 0x42])
        XCTAssertEqual(editor.line, "dra")
        _ = type([0x15]) // Ctrl-U clears
        XCTAssertEqual(editor.line, "")
        XCTAssertEqual(type([0x04]).last, .endOfInput, "Ctrl-D on an empty line ends input")
        // A multi-byte character and an escape sequence split across reads.
        let split = LineEditor.Key.decode([0xC3])
        XCTAssertEqual(split.keys, [])
        XCTAssertEqual(LineEditor.Key.decode(split.rest + [0xA9]).keys, [.character("é")])
        XCTAssertEqual(LineEditor.Key.decode([0x1B, 0x5B]).rest, [0x1B, 0x5B])
    }
}
