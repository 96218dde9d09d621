import Foundation
import Logging
import NIOConcurrencyHelpers

/// Bounds what a flood makes the client log: per kind of line (a kind of protocol violation, a kind of frame), at
/// most `budget` lines a second are logged; the others are counted, and one summary line says how many were left
/// out, once that second is over. What is reported elsewhere is not throttled (``DDPClient/errors`` gets every
/// error). A log handler is app code: without this, a server sending 100,000 bad frames made an app's formatting
/// handler run 100,000 times on the client queue.
///
/// Thread-safe (the counts are behind a lock, never held while logging).
final class LogThrottle: Sendable {
    /// The budgets.
    static let violationsPerSecond = 1
    static let framesPerSecond = 100
    /// The most kinds counted apart; past it, new kinds share one count.
    static let maxKinds = 256

    private struct Window {
        var start: Date
        var logged = 0
        var suppressed = 0
        var flushScheduled = false
    }

    /// A kind of line: up to three words, each a literal or a DDP message name (no string is built per line).
    struct Kind: Hashable, Sendable, CustomStringConvertible {
        let first: String
        let second: String
        var third = ""

        static let other = Kind(first: "other", second: "")
        /// Server data for a stub-written document that does not fit its kept-aside copy.
        static let keptAsideAnomaly = Kind(first: "anomaly", second: "kept aside")

        /// `ready` or `nosub` for a subscription the client does not have.
        static func unknownSubscription(_ message: String) -> Kind {
            Kind(first: "unknown subscription", second: message)
        }

        /// `result` or `updated` for a call the client settled without it (``ClientCore/Action/logLateAnswer``).
        static func lateAnswer(_ message: String) -> Kind { Kind(first: "late answer", second: message) }

        var description: String { [first, second, third].filter { !$0.isEmpty }.joined(separator: " ") }
    }

    private let windows = NIOLockedValueBox<[Kind: Window]>([:])
    private let scheduler: any DDPScheduler
    private let logger: Logger

    init(scheduler: any DDPScheduler, logger: Logger) {
        self.scheduler = scheduler
        self.logger = logger
    }

    /// Whether a line of `kind` may be logged now. When it may not, the line is counted and a summary at `level` is
    /// logged once the current second is over.
    func admit(_ kind: Kind, budget: Int, level: Logger.Level) -> Bool {
        let now = scheduler.now
        // Kinds are few (violation cases, message names); a bound all the same.
        let (admitted, scheduleFlush, kind): (Bool, Bool, Kind) = windows.withLockedValue { windows in
            let kind = windows[kind] != nil || windows.count < Self.maxKinds ? kind : .other
            var window = windows[kind] ?? Window(start: now)
            if now.timeIntervalSince(window.start) >= 1, window.suppressed == 0 {
                window = Window(start: now)
            }
            guard window.logged >= budget else {
                window.logged += 1
                windows[kind] = window
                return (true, false, kind)
            }
            window.suppressed += 1
            let schedule = !window.flushScheduled
            window.flushScheduled = true
            windows[kind] = window
            return (false, schedule, kind)
        }
        if scheduleFlush {
            _ = scheduler.schedule(after: .seconds(1)) { [weak self] in
                self?.flush(kind, budget: budget, level: level)
            }
        }
        return admitted
    }

    /// Whether a frame line (`received added`, `sent pong`, …, at `.trace`) may be logged now.
    func admitFrame(_ direction: String, _ name: String) -> Bool {
        admit(Kind(first: direction, second: name), budget: Self.framesPerSecond, level: .trace)
    }

    /// The second is over: says how many lines of `kind` were left out, and opens a new second.
    private func flush(_ kind: Kind, budget: Int, level: Logger.Level) {
        let now = scheduler.now
        let suppressed: Int = windows.withLockedValue { windows in
            let count = windows[kind]?.suppressed ?? 0
            windows[kind] = Window(start: now)
            return count
        }
        guard suppressed > 0 else { return }
        logger.log(
            level: level,
            "\(suppressed) more lines of this kind were not logged (at most \(budget) a second are)",
            metadata: ["kind": "\(kind)", "notLogged": "\(suppressed)"])
    }
}

extension DDPError {
    /// What makes two reports the same kind for ``LogThrottle``: the code, and a violation's kind (its case and the
    /// message it is about, never what a server chose: an id, a parser's offset, an unknown `msg`).
    var throttleKind: LogThrottle.Kind {
        let code = code.rawValue
        guard let violation else { return LogThrottle.Kind(first: code, second: "") }
        switch violation.kind {
        case .malformedJSON: return LogThrottle.Kind(first: code, second: "malformedJSON")
        case .binaryFrame: return LogThrottle.Kind(first: code, second: "binaryFrame")
        case .notAnObject: return LogThrottle.Kind(first: code, second: "notAnObject")
        case .missingMsg: return LogThrottle.Kind(first: code, second: "missingMsg")
        case .unknownMessage: return LogThrottle.Kind(first: code, second: "unknownMessage")
        case .missingField(let message, _):
            return LogThrottle.Kind(first: code, second: "missingField", third: String(message.prefix(32)))
        case .wrongFieldType(let message, _):
            return LogThrottle.Kind(first: code, second: "wrongFieldType", third: String(message.prefix(32)))
        case .unexpected(let message, _):
            return LogThrottle.Kind(first: code, second: "unexpected", third: String(message.prefix(32)))
        }
    }
}
