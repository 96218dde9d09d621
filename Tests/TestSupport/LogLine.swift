import Logging

/// One logged event as a line of text: the message, then its metadata (the handler's, overridden by the event's) as
/// `key=value`, sorted by key. The test log handlers (a recorder, the chaos soak's trace file) write it.
public func logLine(_ event: LogEvent, handlerMetadata: Logger.Metadata) -> String {
    let merged = handlerMetadata.merging(event.metadata ?? [:]) { $1 }
    return ([String(describing: event.message)] + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" })
        .joined(separator: " ")
}
