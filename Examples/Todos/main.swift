import DDPTestServer
import EJSON
import Foundation
import MeteorDDP

// swift run todos [--url ws://host:port/websocket] [--script FILE] [--latency MS] [--interactive]
//                  [--store PATH [--offline]]
// swift run todos --serve [--port N]    (only the embedded server, for other clients such as `swift run ddp URL`)
//
// With no URL, an embedded DDP server (DDPTestServer) starts on 127.0.0.1 with Meteor's Todos app, and the client
// connects to it. Without --script, the tour in demo.txt (next to this file) runs first, unless --interactive; then,
// when standard input is a terminal, commands are read from it (`help` lists them).
//
// --store PATH keeps the cache and unanswered calls in a SQLite file between runs; --offline never connects (the
// server is unreachable): todos added then are on disk, shown at once on the next run and sent once connected.

func option(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}
let urlArgument = option("--url")
let scriptPath = option("--script")
let latency = Duration.milliseconds(Int(option("--latency") ?? "") ?? 150)

if CommandLine.arguments.contains("--serve") {
    let server = try await TodosServer.start(latency: latency, port: Int(option("--port") ?? "") ?? 0)
    FileHandle.standardOutput.write(
        Data(
            ("serving Meteor's Todos app on \(server.url) (user: ada@example.com, password: password); "
                + "stop with Ctrl-C\n").utf8))
    while true { try await Task.sleep(for: .seconds(3600)) }
}

let storePath = option("--store")
let offline = CommandLine.arguments.contains("--offline")
let server: DDPTestServer? = urlArgument == nil && !offline ? try await TodosServer.start(latency: latency) : nil
guard
    let url = urlArgument.flatMap(URL.init(string:)) ?? server?.url
        ?? (offline ? URL(string: "ws://127.0.0.1:9/websocket") : nil)
else {
    print("not a URL: \(urlArgument ?? "")")
    exit(2)
}
if server != nil {
    print("embedded DDP server on \(url) (methods answer after \(latency) to make latency compensation visible)")
}

var configuration = DDPClient.Configuration()
if let storePath { configuration.persistence = .sqlite(at: URL(fileURLWithPath: storePath)) }
let client = DDPClient(url: url, configuration: configuration)
TodosStubs.define(on: client)
let app = TodosApp(client: client, offline: offline, server: server)
if let storePath {
    let report = client.restoreReport
    app.log(
        "store \(storePath): restored \(report.documents) documents and \(report.methods) unanswered calls"
            + (report.problem.map { " (\($0))" } ?? ""))
    if report.documents > 0 { app.showLists() }
    for call in client.restoredCalls.calls {
        app.log("queued from the last run: \(call.name) \(EJSON.stringify(.array(call.params)))")
    }
}
// What happens to the calls restored from the last run (their completion handlers ended with it).
let restoredOutcomes = Task { [client, app] in
    for await outcome in client.restoredCalls {
        let result: String
        switch outcome.result {
        case .succeeded(let value): result = "confirmed (result \(value.map { EJSON.stringify($0) } ?? "none"))"
        case .failed(let error): result = "refused, its stub's change rolled back: \(error)"
        case .alreadyApplied(let error): result = "had already run before the restart (\(error))"
        }
        app.log("server: restored call \(outcome.call.name) (id \(outcome.call.id)) \(result)")
    }
}
let changes = app.watchChanges()
let lists = client.subscribe("lists.public")
if offline {
    app.log("offline: not connecting; the cache and the stubs work as usual")
} else {
    client.connect()
    for await status in client.statusUpdates {
        if status.isConnected { break }
        if status.state == .failed {
            print("could not connect: \(status)")
            exit(1)
        }
    }
    app.log("connected to \(url)")
    // With a store the lists are already cached: the app goes on at once (the subscriptions it makes next are
    // awaited together when the first connection reconciles the restored cache).
    if storePath == nil || client.restoreReport.documents == 0 {
        try await lists.ready()
        app.showLists()
    }
}

/// The commands of a script file: one per line, `#` comments and blank lines skipped.
func commands(inScript path: String) throws -> [String] {
    try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        .filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty && !$0.hasPrefix("#") }
}

let interactiveOnly = CommandLine.arguments.contains("--interactive")
let tourPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("demo.txt").path
let script: [String]
if let scriptPath {
    script = try commands(inScript: scriptPath)
} else if !interactiveOnly, FileManager.default.fileExists(atPath: tourPath) {
    print("a short tour first (\(tourPath)); --interactive skips it")
    // The tour's last command leaves; stay for the terminal's commands.
    script = try commands(inScript: tourPath).filter { $0 != "quit" }
} else {
    script = []
}
var quit = false
for command in script {
    print("> \(command)")
    guard await app.run(command) else {
        quit = true
        break
    }
}
if !quit, scriptPath == nil, isatty(STDIN_FILENO) != 0 {
    print(TodosApp.help)
    while true {
        print("> ", terminator: "")
        guard let line = readLine(), await app.run(line) else { break }
    }
}
// Let the last change notifications print before leaving (the printer runs on its own task).
client.database.notificationQueue.sync {}
try await Task.sleep(for: .milliseconds(50))
changes.cancel()
// Every restored call's outcome printed once all are known (the sequence then ends); else they wait for a next run.
if client.restoredCalls.isComplete { await restoredOutcomes.value } else { restoredOutcomes.cancel() }
// Everything on disk before quitting (the store writes behind; a kill would keep what was written).
await client.flushStore()
client.close()
try await server?.stop()
