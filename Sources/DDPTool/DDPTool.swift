import ArgumentParser
import DDPCommandLine
import Foundation
import MeteorDDP

/// `ddp`: a command-line DDP client to poke at a Meteor server. `ddp URL` opens a session of commands; `ddp stats URL`
/// shows the client's diagnostics, refreshed live.
@main
struct DDPTool: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ddp",
        abstract: "Connect to a Meteor server over DDP: subscribe, call methods, log in, watch collections.",
        usage: """
            ddp <url> [--json] [--script <file>] [--connect-timeout <seconds>]
            ddp stats <url> [--json] [--sub <name> ...] [--interval <seconds>] [--count <n>]
            """,
        subcommands: [Shell.self, Stats.self],
        defaultSubcommand: Shell.self
    )
}

/// What every `ddp` command connects with.
struct ServerOptions: ParsableArguments {
    @Argument(help: "The server: http://localhost:3000, localhost:3000 or ws://localhost:3000/websocket.")
    var url: String

    @Flag(help: "Print one JSON object per line (each with an \"event\" field) instead of text.")
    var json = false

    @Option(help: ArgumentHelp("Seconds to wait for the connection.", valueName: "seconds"))
    var connectTimeout: Double = 10

    /// A client connected to the server, and the interpreter around it (printing to standard output).
    func connectedSession() async throws -> CommandLineSession {
        guard let serverURL = ServerURL.webSocketURL(url) else {
            throw ValidationError(
                "'\(url)' is not a server address: use http(s)://host:port, host:port or ws(s)://host:port/websocket")
        }
        let style: CommandOutput.Style = json ? .json : .text(colour: isatty(STDOUT_FILENO) != 0)
        let output = CommandOutput(style: style) { line in FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
        let client = DDPClient(url: serverURL)
        let session = CommandLineSession(client: client, output: output)
        client.connect()
        let connected = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await status in client.statusUpdates where status.isConnected { return true }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(connectTimeout))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        guard connected else {
            session.close()
            throw ValidationError("could not connect to \(url) within \(connectTimeout) s (status: \(client.status))")
        }
        return session
    }
}

/// `ddp stats URL`: the client's diagnostics (``ClientDiagnostics``) refreshed live, the figures that changed
/// highlighted; `--json` prints each snapshot as one JSON object.
struct Stats: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the client's diagnostics, refreshed live: connection, subscriptions, calls, collections.")

    @OptionGroup var server: ServerOptions

    @Option(
        name: .customLong("sub"),
        help: ArgumentHelp(
            "Subscribe to this publication first (repeatable; NAME [ARGS…] as one word).", valueName: "name"))
    var subscriptions: [String] = []

    @Option(help: ArgumentHelp("Seconds between refreshes.", valueName: "seconds"))
    var interval: Double = 1

    @Option(help: ArgumentHelp("Refresh this many times, then leave (default: until interrupted).", valueName: "n"))
    var count: Int?

    func validate() throws {
        guard interval > 0 else { throw ValidationError("--interval must be more than 0 seconds") }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
    }

    func run() async throws {
        let session = try await server.connectedSession()
        defer { session.close() }
        for subscription in subscriptions { _ = await session.run("sub \(subscription)") }
        let redraw = !server.json && isatty(STDOUT_FILENO) != 0
        try await session.showStats(every: .seconds(interval), times: count, redraw: redraw)
    }
}

/// `ddp URL`: commands from the terminal, a script or standard input.
struct Shell: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run commands against the server (the default).",
        discussion: "Commands are read from the terminal, a script (--script) or standard input:\n\n"
            + CommandLineSession.help
    )

    @OptionGroup var server: ServerOptions

    @Option(
        help: ArgumentHelp(
            "Read commands from this file ('-' for standard input) instead of the terminal.", valueName: "file"))
    var script: String?

    func run() async throws {
        let interactive = script == nil && isatty(STDIN_FILENO) != 0
        let json = server.json
        let session = try await server.connectedSession()
        _ = await session.run("status")
        if let script, script != "-" {
            let lines = try String(contentsOfFile: script, encoding: .utf8).split(
                separator: "\n", omittingEmptySubsequences: false
            ).map(String.init)
            for line in lines where !line.trimmingCharacters(in: .whitespaces).isEmpty {
                if !json { FileHandle.standardOutput.write(Data("> \(line)\n".utf8)) }
                guard await session.run(line) else { break }
            }
        } else {
            // Standard input is read on a thread of its own (a blocking read must not hold one of the concurrency
            // pool's threads, which `watch` output needs), one line at a time, after the previous command finished.
            let (lines, continuation) = AsyncStream.makeStream(of: String.self)
            let nextLine = DispatchSemaphore(value: 1)
            let terminal = interactive ? Terminal() : nil
            let reader = Thread {
                while true {
                    nextLine.wait()
                    guard let line = terminal.map({ $0.readLine(prompt: "ddp> ") }) ?? readLine() else { break }
                    continuation.yield(line)
                }
                continuation.finish()
            }
            reader.start()
            for await line in lines {
                if !line.trimmingCharacters(in: .whitespaces).isEmpty {
                    if !interactive, !json { FileHandle.standardOutput.write(Data("> \(line)\n".utf8)) }
                    guard await session.run(line) else { break }
                }
                nextLine.signal()
            }
        }
        session.close()
    }
}
