import Foundation
import Logging
import NIOConcurrencyHelpers
import TestSupport

/// Writes every log line (trace level) to a file with a monotonic timestamp, for replaying what a client did in a
/// chaos soak that hung (`MDDP_CHAOS_TRACE=<path>`). Not used otherwise: a soak's trace is tens of megabytes.
struct TraceFileLogHandler: LogHandler {
    private final class Sink: @unchecked Sendable {
        // @unchecked because `handle` is written only under `lock`.
        let lock = NIOLock()
        let handle: FileHandle
        init(handle: FileHandle) { self.handle = handle }
    }

    private let sink: Sink
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    /// A handler writing to `path` (created or truncated), or `nil` if it cannot be opened.
    static func factory(path: String) -> (@Sendable (String) -> any LogHandler)? {
        guard FileManager.default.createFile(atPath: path, contents: nil),
            let handle = FileHandle(forWritingAtPath: path)
        else { return nil }
        let sink = Sink(handle: handle)
        return { _ in TraceFileLogHandler(sink: sink) }
    }

    private init(sink: Sink) {
        self.sink = sink
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let time = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
        let line = String(format: "%.6f ", time) + "\(event.level) \(logLine(event, handlerMetadata: metadata))\n"
        sink.lock.withLock { sink.handle.write(Data(line.utf8)) }
    }
}
