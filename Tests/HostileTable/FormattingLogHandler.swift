import Foundation
import Logging

/// A log handler as apps write them: every line formatted (a timestamp, the level, the label, the message and the
/// sorted metadata) into a `String`, which is then dropped (counted). The hostile table's clients log through it at
/// `.debug` (every error the client reports is a line there), so that a flood which makes the client log per frame
/// shows in the recovery times. (At `.trace` every frame is a line too, bounded per kind: LogThrottleTests.)
struct FormattingLogHandler: LogHandler {
    /// The lines formatted so far, by every handler.
    static let lines = FormattedLines()

    let label: String
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .debug

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let fields = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let line = "\(Date().formatted(.iso8601)) \(event.level) \(label): \(event.message) \(fields)"
        Self.lines.add(line.utf8.count)
    }

    /// A logger that formats through this handler.
    static func logger() -> Logger {
        var logger = Logger(label: "MeteorDDP", factory: { FormattingLogHandler(label: $0) })
        logger.logLevel = .debug
        return logger
    }
}

/// How many lines (and bytes) were formatted.
final class FormattedLines: @unchecked Sendable {
    // @unchecked because the counts are protected by `lock`.
    private let lock = NSLock()
    private var count = 0
    private var bytes = 0

    func add(_ length: Int) {
        lock.withLock {
            count += 1
            bytes += length
        }
    }

    var value: (lines: Int, bytes: Int) { lock.withLock { (count, bytes) } }
}
