import Foundation
import Logging

/// Records every line logged through its ``logger`` (at every level), with its metadata, for tests that check what
/// is and is not logged.
public final class LogRecorder: @unchecked Sendable {
    // @unchecked because `recorded` is protected by `lock`.
    private let lock = NSLock()
    private var recorded: [String] = []
    /// Called after each line is recorded, on the logging thread (no lock held).
    private let onLog: (@Sendable () -> Void)?

    public init(onLog: (@Sendable () -> Void)? = nil) {
        self.onLog = onLog
    }

    /// A logger at `.trace` that records here.
    public var logger: Logger {
        Logger(label: "test", factory: { [self] _ in RecordingLogHandler(recorder: self) })
    }

    /// Each line: the message, then its metadata as `key=value`, sorted by key.
    public var lines: [String] { lock.withLock { recorded } }

    fileprivate func append(_ line: String) {
        lock.withLock { recorded.append(line) }
        onLog?()
    }
}

private struct RecordingLogHandler: LogHandler {
    let recorder: LogRecorder
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        recorder.append(logLine(event, handlerMetadata: metadata))
    }
}
