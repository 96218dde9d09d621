import DDPTestServer
import Dispatch
import EJSON
import Foundation
import MeteorDDP

/// Many clients in one process (a load tester, a server-side bridge): 1,000 clients against one DDPTestServer, each
/// subscribed to a 10-document publication.
enum ManyClientsBenchmarks {
    static func run(count: Int = 1_000) async throws {
        Bench.section("Many clients: \(count) clients in one process, each subscribed to a 10-document publication")
        let server = DDPTestServer()
        try await server.start()
        server.publish("ten") { _ in [Cursor(collection: "items")] }
        server.perform {
            for i in 0..<10 { _ = try? server.collection("items").insert(["n": .number(Double(i)), "label": .string("item \(i)")], id: "i\(i)") }
        }
        let before = DatabaseBenchmarks.residentBytes()
        let start = Bench.now()
        var configuration = DDPClient.Configuration()
        configuration.heartbeatInterval = .seconds(15)
        let clients = (0..<count).map { _ in DDPClient(url: server.url, configuration: configuration) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for client in clients {
                group.addTask {
                    client.connect()
                    try await client.subscribe("ten").ready()
                }
            }
            try await group.waitForAll()
        }
        let seconds = Double(Bench.now() - start) / 1e9
        precondition(clients.allSatisfy { $0.database.collection("items").count == 10 })
        let after = DatabaseBenchmarks.residentBytes()
        Bench.figure("all connected and ready", seconds, unit: "s", note: "target within 5 s")
        // Memory: each client holds its 10 documents too (measured apart below); the server's sessions are included.
        let documentsOnly = try await documentBytes(count: count)
        Bench.figure("resident memory per client (client + its server session, its 10 documents excluded)",
                     Double(after - before - documentsOnly) / Double(count) / 1024, unit: "KB", note: "target <= 64 KB")
        // Idle CPU: heartbeats only.
        let cpuBefore = cpuSeconds()
        let idleStart = Bench.now()
        try await Task.sleep(for: .seconds(5))
        let idleSeconds = Double(Bench.now() - idleStart) / 1e9
        Bench.figure("CPU while idle (heartbeats every 15 s)", (cpuSeconds() - cpuBefore) / idleSeconds * 100, unit: "% of one core")
        for client in clients { client.close() }
        try await server.stop()
    }

    /// The resident memory of `count` caches of the same 10 documents, without clients.
    static func documentBytes(count: Int) async throws -> Int {
        let before = DatabaseBenchmarks.residentBytes()
        let databases = (0..<count).map { _ in Database() }
        for database in databases {
            database.apply((0..<10).map { i in .added(DocumentKey(collectionName: "items", documentID: "i\(i)"), ["n": .number(Double(i)), "label": .string("item \(i)")]) })
        }
        let after = DatabaseBenchmarks.residentBytes()
        withExtendedLifetime(databases) {}
        return max(0, after - before)
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
