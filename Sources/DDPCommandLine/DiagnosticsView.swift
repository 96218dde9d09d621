import EJSON
import Foundation
import MeteorDDP

/// How `ddp stats` and the `stats` command show a client's ``ClientDiagnostics``: one screen of text whose figures are
/// highlighted when they changed since the previous snapshot shown, or, with `--json`, the snapshot itself as one
/// JSON object per refresh.
struct DiagnosticsView {
    /// One figure on a line: `key` names it across snapshots (a subscription's by its id, a call's by its id), so a
    /// figure is highlighted only when the same figure changed.
    struct Cell: Equatable {
        var key: String
        var text: String
    }

    /// The figures of `snapshot`, line by line (a line with no cell is a blank one).
    static func lines(_ snapshot: ClientDiagnostics) -> [[Cell]] {
        var lines: [[Cell]] = []
        let connection = snapshot.connection
        var first = [Cell(key: "state", text: connection.state)]
        if let session = connection.sessionID {
            first.append(Cell(key: "session", text: "session \(session)"))
        }
        if let start = connection.sessionStart { first.append(Cell(key: "start", text: "(\(start))")) }
        if let version = connection.version { first.append(Cell(key: "version", text: "DDP \(version)")) }
        if let compression = connection.compression { first.append(Cell(key: "compression", text: compression)) }
        first.append(Cell(key: "retries", text: "retries \(connection.retryCount)"))
        lines.append([Cell(key: "connection.title", text: "connection")] + first)
        if let received = connection.wireBytesReceived, let sent = connection.wireBytesSent {
            lines.append([
                Cell(key: "wire.title", text: "on the wire"),
                Cell(key: "wire.received", text: "received \(bytes(received))"),
                Cell(key: "wire.sent", text: "sent \(bytes(sent))")
            ])
        }
        let queues = snapshot.queues
        lines.append([
            Cell(key: "queues.title", text: "queues"),
            Cell(key: "queues.calls", text: "pending calls \(queues.pendingCalls)"),
            Cell(key: "queues.held", text: "held for quiescence \(queues.heldForQuiescence)")
        ])
        if let latency = snapshot.optimisticUpdateLatency {
            lines.append([
                Cell(key: "latency.title", text: "call → updated"),
                Cell(key: "latency.p50", text: "p50 \(milliseconds(latency.p50Milliseconds))"),
                Cell(key: "latency.p95", text: "p95 \(milliseconds(latency.p95Milliseconds))"),
                Cell(key: "latency.samples", text: "over \(latency.samples) calls")
            ])
        }
        section(&lines, "subscriptions", snapshot.subscriptions) { subscription in
            let key = "subscription.\(subscription.id)"
            var cells = [
                Cell(key: key + ".name", text: subscription.name),
                Cell(key: key + ".status", text: subscription.status),
                Cell(key: key + ".parameters", text: plural(subscription.parameterCount, "parameter")),
                Cell(key: key + ".handles", text: plural(subscription.handles, "handle"))
            ]
            if let ready = subscription.millisecondsToReady {
                cells.append(Cell(key: key + ".ready", text: "ready in \(milliseconds(ready))"))
            }
            return cells
        }
        section(&lines, "pending calls", snapshot.pendingCalls) { call in
            let key = "call.\(call.id)"
            var cells = [
                Cell(key: key + ".id", text: "#\(call.id)"), Cell(key: key + ".name", text: call.name),
                Cell(key: key + ".phase", text: call.phase),
                Cell(key: key + ".age", text: milliseconds(call.ageMilliseconds))
            ]
            if call.storedOffline { cells.append(Cell(key: key + ".stored", text: "stored offline")) }
            return cells
        }
        section(&lines, "collections", snapshot.collections) { collection in
            [
                Cell(key: "collection.\(collection.name).name", text: collection.name),
                Cell(key: "collection.\(collection.name).documents", text: plural(collection.documents, "document"))
            ]
        }
        section(&lines, "recent errors", snapshot.recentErrors) { error in
            [
                Cell(key: "error.\(error.at.timeIntervalSince1970).at", text: time(error.at)),
                Cell(key: "error.\(error.at.timeIntervalSince1970).code", text: error.code),
                Cell(key: "error.\(error.at.timeIntervalSince1970).message", text: error.message)
            ]
        }
        return lines
    }

    /// The snapshot as text, one string per line: a figure whose text differs from the same figure's in `previous`
    /// (or that `previous` did not have) is highlighted through `output` (a no-op unless it writes to a terminal).
    static func render(_ snapshot: ClientDiagnostics, previous: ClientDiagnostics?, output: CommandOutput) -> [String] {
        let before = previous.map { Dictionary(lines($0).joined().map { ($0.key, $0.text) }) { first, _ in first } }
        return lines(snapshot).map { cells in
            cells.enumerated().map { index, cell in
                // Titles (the first cell) and the first snapshot are never highlighted.
                guard index > 0, let before, before[cell.key] != cell.text else {
                    return index == 0 ? output.coloured(cell.text, .cyan) : cell.text
                }
                return output.coloured(cell.text, .yellow)
            }.joined(separator: "  ")
        }
    }

    /// The snapshot as one EJSON object (its `Codable` form, dates as ISO 8601 strings), for `--json`.
    static func json(_ snapshot: ClientDiagnostics) throws -> EJSONValue {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = .sortedKeys
        return try EJSON.parse(String(decoding: try encoder.encode(snapshot), as: UTF8.self))
    }

    private static func section<Item>(
        _ lines: inout [[Cell]], _ title: String, _ items: [Item], _ cells: (Item) -> [Cell]
    ) {
        lines.append([])
        lines.append([Cell(key: "\(title).title", text: "\(title) (\(items.count))")])
        for item in items { lines.append([Cell(key: "\(title).indent", text: " ")] + cells(item)) }
    }

    private static func plural(_ count: Int, _ noun: String) -> String {
        "\(count.formatted()) \(noun)\(count == 1 ? "" : "s")"
    }

    private static func bytes(_ count: Int) -> String {
        count < 10_000 ? "\(count) B" : "\((count / 1_000).formatted()) kB"
    }

    private static func milliseconds(_ value: Double) -> String {
        value < 10 ? String(format: "%.1f ms", value) : "\(Int(value.rounded()).formatted()) ms"
    }

    private static func time(_ date: Date) -> String {
        date.formatted(.iso8601.time(includingFractionalSeconds: false))
    }
}
