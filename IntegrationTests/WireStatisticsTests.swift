import DDPTestServer
import EJSON
import Foundation
import MeteorDDP
import MetricsTestKit
import XCTest

/// What crossed the wire, against DDPTestServer with and without permessage-deflate: the diagnostics' compression
/// and wire bytes, and the `meteor_ddp_wire_bytes_…` metrics beside the inflated `meteor_ddp_bytes_…` ones.
final class WireStatisticsTests: XCTestCase {
    /// Connects a client with a recording backend to a server (compressing or not) publishing 200 alike documents,
    /// subscribes until ready and makes one call; returns the client's snapshot and its byte counters (before the
    /// close, whose `disconnect` frame no burst reports on the wire).
    private func session(deflate: Bool) async throws -> (ClientDiagnostics, [String: Int64]) {
        var serverConfiguration = DDPTestServer.Configuration()
        serverConfiguration.permessageDeflate = deflate
        let server = DDPTestServer(configuration: serverConfiguration)
        try await server.start()
        server.publish("notes") { _ in [Cursor(collection: "notes")] }
        server.method("echo") { context in context.params.first }
        server.perform {
            for index in 0..<200 {
                _ = try? server.collection("notes").insert(
                    [
                        "text": .string(String(repeating: "the same words again ", count: 20)),
                        "n": .number(Double(index))
                    ],
                    id: "n\(index)")
            }
        }
        let metrics = TestMetrics()
        var configuration = DDPClient.Configuration()
        configuration.metricsFactory = metrics
        let client = DDPClient(url: server.url, configuration: configuration)
        client.connect()
        try await client.subscribe("notes").ready()
        _ = try await client.call("echo", params: [.string(String(repeating: "a long parameter ", count: 100))])
        let diagnostics = await client.diagnostics()
        let labels = [
            "meteor_ddp_bytes_received_total", "meteor_ddp_wire_bytes_received_total", "meteor_ddp_bytes_sent_total",
            "meteor_ddp_wire_bytes_sent_total"
        ]
        let counts = Dictionary(uniqueKeysWithValues: labels.map { ($0, metrics.counterTotal(label: $0)) })
        client.close()
        try await server.stop()
        return (diagnostics, counts)
    }

    func testDeflatedFramesAreCountedAsTheyCrossTheWire() async throws {
        let (diagnostics, metrics) = try await session(deflate: true)
        XCTAssertEqual(diagnostics.connection.compression, "permessage-deflate")
        let inflated = metrics["meteor_ddp_bytes_received_total"]!
        let wire = metrics["meteor_ddp_wire_bytes_received_total"]!
        XCTAssertGreaterThan(inflated, 200 * 400)
        XCTAssertGreaterThan(wire, 0)
        XCTAssertLessThan(wire * 5, inflated, "alike documents deflate well: \(wire) of \(inflated) bytes")
        XCTAssertGreaterThanOrEqual(
            Int64(diagnostics.connection.wireBytesReceived ?? 0), wire, "the snapshot reads the same counter, later")
        let sent = metrics["meteor_ddp_wire_bytes_sent_total"]!
        XCTAssertGreaterThan(sent, 0)
        XCTAssertLessThan(sent, metrics["meteor_ddp_bytes_sent_total"]!, "the long call deflated")
    }

    func testUncompressedFramesCountTheirBytesOnce() async throws {
        let (diagnostics, metrics) = try await session(deflate: false)
        XCTAssertNil(diagnostics.connection.compression, "the server refused the offer")
        XCTAssertEqual(
            metrics["meteor_ddp_wire_bytes_received_total"]!,
            metrics["meteor_ddp_bytes_received_total"]!, "nothing inflated: the same bytes")
        XCTAssertEqual(
            metrics["meteor_ddp_wire_bytes_sent_total"]!,
            metrics["meteor_ddp_bytes_sent_total"]!)
    }
}
