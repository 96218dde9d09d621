import DDPTestServer
import Foundation
import MeteorDDP

// swift run todos [--url ws://host:port/websocket] [--script FILE] [--latency MS]
//
// With no URL, an embedded DDP server (DDPTestServer) starts on 127.0.0.1 with Meteor's Todos app, and the client
// connects to it. Commands come from the terminal, or from --script FILE (one per line); `help` lists them.

func option(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}
let urlArgument = option("--url")
let scriptPath = option("--script")
let latency = Duration.milliseconds(Int(option("--latency") ?? "") ?? 150)

let server: DDPTestServer? = urlArgument == nil ? try await TodosServer.start(latency: latency) : nil
guard let url = urlArgument.flatMap(URL.init(string:)) ?? server?.url else {
    print("not a URL: \(urlArgument ?? "")")
    exit(2)
}
if server != nil {
    print("embedded DDP server on \(url) (methods answer after \(latency) to make latency compensation visible)")
}

let client = DDPClient(url: url)
TodosStubs.define(on: client)
let app = TodosApp(client: client)
client.connect()
for await status in client.statusUpdates {
    if status.isConnected { break }
    if status.state == .failed {
        print("could not connect: \(status)")
        exit(1)
    }
}
app.log("connected to \(url)")
let changes = app.watchChanges()
let lists = client.subscribe("lists.public")
try await lists.ready()
app.showLists()

let commands: [String]?
if let scriptPath {
    commands = try String(contentsOfFile: scriptPath, encoding: .utf8).split(separator: "\n").map(String.init)
} else {
    commands = nil
    print(TodosApp.help)
}
if let commands {
    for command in commands where !command.trimmingCharacters(in: .whitespaces).isEmpty && !command.hasPrefix("#") {
        print("> \(command)")
        guard await app.run(command) else { break }
    }
} else {
    while true {
        print("> ", terminator: "")
        guard let line = readLine(), await app.run(line) else { break }
    }
}
// Let the last change notifications print before leaving (the printer runs on its own task).
client.database.notificationQueue.sync {}
try await Task.sleep(for: .milliseconds(50))
changes.cancel()
client.close()
try await server?.stop()
