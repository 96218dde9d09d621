import DDPTestServer
import Foundation

// swift run getting-started [ws://host:3000/websocket]
// The README's walk-through (Walkthrough.swift) against a server: the embedded DemoServer on 127.0.0.1 unless a URL
// is given (a Meteor app with the same publication, methods and user).

let argument = CommandLine.arguments.dropFirst().first
let server: DDPTestServer? = argument == nil ? try await DemoServer.start() : nil
guard let url = argument.flatMap(URL.init(string:)) ?? server?.url else {
    print("not a URL: \(argument ?? "")")
    exit(2)
}
try await walkthrough(url: url)
try await server?.stop()
