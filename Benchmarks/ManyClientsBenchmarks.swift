import DDPTestServer
import Dispatch
import EJSON
import Foundation
import MeteorDDP

/// Many clients in one process (a load tester, a server-side bridge): 1,000 clients against one DDPTestServer, each
/// subscribed to a 10-document publication.
enum ManyClientsBenchmarks {
    /// With `deflate`, the server accepts the clients' permessage-deflate offer, so each client holds zlib state.
    static func run(
        count: Int = ProcessInfo.processInfo.environment["MDDP_CLIENTS"].flatMap(Int.init) ?? 1_000, deflate: Bool
    ) async throws {
        let mode = deflate ? "permessage-deflate on" : "permessage-deflate off"
        Bench.section(
            "Many clients (\(mode)): \(count) clients in one process, each subscribed to a 10-document publication")
        let server = try TenServer(deflate: deflate)
        defer { _ = server.stop() }
        let url = server.url
        let before = DatabaseBenchmarks.residentBytes()
        if ProcessInfo.processInfo.environment["MDDP_TRACE"] != nil { mallocStats() }
        let start = Bench.now()
        var configuration = DDPClient.Configuration()
        configuration.heartbeatInterval = .seconds(15)
        let clients = (0..<count).map { _ in DDPClient(url: url, configuration: configuration) }
        if ProcessInfo.processInfo.environment["MDDP_STAGES"] != nil {
            print(
                "created: \(Double(DatabaseBenchmarks.residentBytes() - before) / Double(count) / 1024) KB per client")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for client in clients {
                    group.addTask {
                        client.connect()
                        for await status in client.statusUpdates where status.isConnected { break }
                    }
                }
                try await group.waitForAll()
            }
            print(
                "connected: \(Double(DatabaseBenchmarks.residentBytes() - before) / Double(count) / 1024) KB per client"
            )
        }
        try await connectAndSubscribe(clients)
        let seconds = Double(Bench.now() - start) / 1e9
        precondition(clients.allSatisfy { $0.database.collection("items").count == 10 })
        let after = DatabaseBenchmarks.residentBytes()
        if ProcessInfo.processInfo.environment["MDDP_TRACE"] != nil {
            print("after connecting: \(threadCount()) threads")
            mallocStats()
        }
        Bench.figure("all connected and ready", seconds, unit: "s", note: "target within 5 s")
        // Memory: each client holds its 10 documents too (measured apart below).
        let documentsOnly = try await documentBytes(count: count)
        Bench.figure(
            "resident memory per client (the server in another process; its 10 documents excluded)",
            Double(after - before - documentsOnly) / Double(count) / 1024, unit: "KB",
            note: deflate ? "\(mode): zlib state per socket; printed" : "\(mode): target <= 64 KB")
        // Idle CPU: heartbeats only.
        let cpuBefore = cpuSeconds()
        let idleStart = Bench.now()
        try await Task.sleep(for: .seconds(5))
        let idleSeconds = Double(Bench.now() - idleStart) / 1e9
        Bench.figure(
            "CPU while idle (heartbeats every 15 s)", (cpuSeconds() - cpuBefore) / idleSeconds * 100,
            unit: "% of one core")
        Bench.figure(
            "threads in the process, idle", Double(threadCount()), unit: "",
            note: "\(count) clients; the server in another process")
        for client in clients { client.close() }
        // What the server compressed (its last line, printed as it ends): proof the mode was what it says.
        let statistics = server.stop()
        print("server: \(statistics)")
        precondition(
            statistics.hasPrefix("permessage-deflate connections \(deflate ? count : 0) "),
            "permessage-deflate was not as asked")
    }

    /// Connects every client and waits until each one's subscription to "ten" is ready.
    static func connectAndSubscribe(_ clients: [DDPClient]) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for client in clients {
                group.addTask {
                    client.connect()
                    try await client.subscribe("ten").ready()
                }
            }
            try await group.waitForAll()
        }
    }

    /// A document of the "ten" publication.
    static func tenFields(_ i: Int) -> EJSONObject {
        ["n": .number(Double(i)), "label": .string("item \(i)")]
    }

    /// The server side of `run`, in a process of its own: DDPTestServer publishing "ten"; prints its port, then
    /// serves until its standard input ends.
    static func serveTen(deflate: Bool) async throws {
        var configuration = DDPTestServer.Configuration()
        configuration.permessageDeflate = deflate
        let server = DDPTestServer(configuration: configuration)
        try await server.start()
        server.publish("ten") { _ in [Cursor(collection: "items")] }
        server.perform {
            for i in 0..<10 { _ = try? server.collection("items").insert(tenFields(i), id: "i\(i)") }
        }
        FileHandle.standardOutput.write(Data("\(server.port)\n".utf8))
        _ = FileHandle.standardInput.readDataToEndOfFile()
        try await server.stop()
        let statistics = server.perMessageDeflateStatistics
        FileHandle.standardOutput.write(
            Data(
                ("permessage-deflate connections \(statistics.connections) messages deflated "
                    + "\(statistics.messagesDeflated) inflated \(statistics.messagesInflated)\n").utf8))
    }

    /// The port line the server process prints first.

    /// The resident memory of `count` caches of the same 10 documents, without clients.
    static func documentBytes(count: Int) async throws -> Int {
        let before = DatabaseBenchmarks.residentBytes()
        let databases = (0..<count).map { _ in Database() }
        for database in databases {
            database.apply(
                (0..<10).map { i in .added(DocumentKey(collectionName: "items", documentID: "i\(i)"), tenFields(i)) })
        }
        let after = DatabaseBenchmarks.residentBytes()
        withExtendedLifetime(databases) {}
        return max(0, after - before)
    }

    static func mallocStats() {
        typealias Function = @convention(c) () -> Void
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_stats") else { return }
        unsafeBitCast(symbol, to: Function.self)()
    }

    /// The process's thread count (Linux: /proc; 0 elsewhere).
    static func threadCount() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("Threads:") } ?? ""
        return Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) ?? 0
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(
            usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}

/// The "ten" publication's server in a process of its own (this benchmark's executable, `serve-ten`), so that this
/// process's memory and CPU are the clients' alone.
final class TenServer {
    let url: URL
    private let process = Process()
    private let output = Pipe()
    private let input = Pipe()
    private var statistics: String?

    init(deflate: Bool) throws {
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = [deflate ? "serve-ten-deflate" : "serve-ten"]
        process.standardOutput = output
        process.standardInput = input
        try process.run()
        let port: Int
        do {
            port = try Self.readPort(output.fileHandleForReading)
        } catch {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
            throw error
        }
        url = URL(string: "ws://127.0.0.1:\(port)/websocket")!
    }

    /// Ends the server (it ends when its input does) and returns its last line, its statistics.
    func stop() -> String {
        if let statistics { return statistics }
        try? input.fileHandleForWriting.close()
        let rest = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let last = rest.split(separator: "\n").last.map(String.init) ?? ""
        statistics = last
        return last
    }

    private static func readPort(_ handle: FileHandle) throws -> Int {
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = handle.availableData
            guard !chunk.isEmpty else { break }
            line.append(chunk)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            throw CocoaError(.fileReadCorruptFile)
        }
        return port
    }
}
