import DDPTestServer
import EJSON
import Foundation
import MeteorDDP
import NIOConcurrencyHelpers

/// Session resumption (Meteor 3.5+): a client subscribed to 10,000 documents loses its socket; how long until its data
/// is current again and how many bytes it receives meanwhile, resumed against a new session (the classic reconnect:
/// login, subscriptions and every document again), same server, alternating rounds.
enum ResumptionBenchmarks {
    static func run(documents: Int = 10_000, rounds: Int = 5) {
        Bench.section(
            "Resumption: a client with \(documents) documents loses its socket (loopback), resumed vs a new session")
        let semaphore = DispatchSemaphore(value: 0)
        let figures = NIOLockedValueBox<(resumed: [(Double, Int)], new: [(Double, Int)])>(([], []))
        Task {
            defer { semaphore.signal() }
            do {
                let server = DDPTestServer()
                try await server.start()
                server.publishBenchDocuments(count: documents)
                for round in 0..<rounds {
                    for resumes in [true, false] {
                        let sample = try await blip(server: server, resumes: resumes, round: round)
                        figures.withLockedValue { resumes ? $0.resumed.append(sample) : $0.new.append(sample) }
                    }
                }
                try await server.stop()
            } catch {
                print("resumption benchmark failed: \(error)")
            }
        }
        semaphore.wait()
        let (resumed, new) = figures.withLockedValue { ($0.resumed, $0.new) }
        guard resumed.count == rounds, new.count == rounds else { return }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        let resumedTime = median(resumed.map(\.0))
        let newTime = median(new.map(\.0))
        let resumedBytes = median(resumed.map { Double($0.1) })
        let newBytes = median(new.map { Double($0.1) })
        Bench.report(
            "blip → data current again", ours: resumedTime * 1000, baseline: newTime * 1000, unit: "ms",
            baselineName: "a new session (login, sub, every document again)", target: "≤ 0.2x (≥ 5x faster)")
        Bench.report(
            "bytes received from the blip until then", ours: resumedBytes, baseline: newBytes, unit: "bytes",
            baselineName: "a new session", target: "≤ 0.1x (≥ 10x fewer)")
    }

    /// One client: connected, subscribed and ready; then the server drops its socket as a network would; returns the
    /// seconds until a document inserted once the client is connected again is in its cache, and the bytes received.
    private static func blip(server: DDPTestServer, resumes: Bool, round: Int) async throws -> (Double, Int) {
        var configuration = DDPClient.Configuration()
        configuration.resumesSessions = resumes
        configuration.retryStrategy = RetryStrategy(baseTimeout: 10, exponent: 2, maxTimeout: 100, minTimeout: 10)
        let transport = CountingTransport(WebSocketTransport(url: server.url))
        let client = DDPClient(transport: transport, configuration: configuration)
        defer { client.close() }
        _ = client.collection(BenchDocuments.collection)
        client.connect()
        let subscription = client.subscribe("bench")
        try await subscription.ready()
        let statuses = client.statusUpdates
        let bytesBefore = transport.bytesReceived
        let start = Bench.now()
        server.severAllConnections()
        // Connected again once the drop was seen (the stream starts with the status current when it was taken).
        var dropped = false
        for await status in statuses {
            if !status.isConnected { dropped = true } else if dropped { break }
        }
        let marker = "marker-\(resumes)-\(round)"
        let live = client.database.collection(BenchDocuments.collection).observe(try Query(["_id": .string(marker)]))
        defer { live.stop() }
        server.perform { _ = try? server.collection(BenchDocuments.collection).insert(["n": 0], id: marker) }
        for await snapshot in live.snapshots where !snapshot.documents.isEmpty { break }
        let seconds = Double(Bench.now() - start) / 1e9
        return (seconds, transport.bytesReceived - bytesBefore)
    }
}

/// Counts the bytes of the text frames a transport delivers.
final class CountingTransport: Transport, @unchecked Sendable {
    private let inner: any Transport
    private let received = NIOLockedValueBox(0)
    var bytesReceived: Int { received.withLockedValue { $0 } }

    init(_ inner: any Transport) {
        self.inner = inner
    }

    func connect(onEvent: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
        inner.connect { [received] event in
            if case .text(let text) = event { received.withLockedValue { $0 += text.utf8.count } }
            onEvent(event)
        }
    }
}
