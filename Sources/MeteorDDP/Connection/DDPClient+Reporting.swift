import EJSON
import Foundation

/// What the client tells the app and its logs: reported errors, the published status, and frames as they may be
/// logged (secrets redacted).
extension DDPClient {
    /// Whether a `.debug` line of `kind` is logged now: the logger logs at `.debug` and ``LogThrottle`` admits it (one
    /// a second per kind, the others counted in a summary).
    func admitsDebugLine(_ kind: LogThrottle.Kind) -> Bool {
        logger.logLevel <= .debug && logThrottle.admit(kind, budget: LogThrottle.violationsPerSecond, level: .debug)
    }

    /// Reports an error the client survived: logged at `.debug` (at most one line a second per kind, the others
    /// counted in a summary: ``LogThrottle``) and published on ``errors`` (every one).
    func report(_ error: DDPError) {
        if let violation = error.violation { emitMetrics { $0.protocolViolation(violation) } }
        if error.code == .heartbeatTimedOut { emitMetrics { $0.heartbeatTimeouts.increment() } }
        recordForDiagnostics(error)
        if admitsDebugLine(error.throttleKind) { logger.debug("\(error.description)") }
        // `reportsOfThisDrain` belongs to the client queue: asked only there (the offline store's writer reports too).
        guard isOnClientQueue, reportsOfThisDrain != nil else { return errorBroadcaster.yield(error) }
        reportsOfThisDrain!.append(error)
        if reportsOfThisDrain!.count >= Self.errorsBufferLimit { publishReportsOfThisDrain(continuing: true) }
    }

    /// A method's parameters may carry secrets (passwords, resume and reset tokens, custom login handlers' data):
    /// method frames are logged without them, unless the method is listed in
    /// ``Configuration/methodsWithLoggableParams``.
    func loggable(_ frame: String, message: ClientMessage) -> String {
        guard case .method(let id, let method, _, _) = message,
            !configuration.methodsWithLoggableParams.contains(method)
        else {
            return frame
        }
        return EJSON.stringify(["msg": "method", "id": .string(id), "method": .string(method), "params": "<redacted>"])
    }

    /// A method's result may carry secrets too (a login's or `getNewToken`'s token, whatever an app's method returns):
    /// received results are logged without it, unless the method is listed in
    /// ``Configuration/methodsWithLoggableParams``. Other frames are logged as received, cut at 300 characters.
    func loggable(_ message: ServerMessage) -> String {
        if case .result(let id, _?, _) = message,
            !(core.session.methods.name(of: id).map(configuration.methodsWithLoggableParams.contains) ?? false)
        {
            return EJSON.stringify(["msg": "result", "id": .string(id), "result": "<redacted>"])
        }
        return String(EJSON.stringify(message.ejsonValue).prefix(300))
    }

    // MARK: - Status

    func publish(_ status: ConnectionStatus) {
        // The version (derived from the connected state, so it changes only with the status) first: whoever sees the
        // new status reads the version that goes with it.
        let version = core.sessionVersion
        publishedVersion.withLockedValue { $0 = version }
        let previous: ConnectionStatus? = publishedStatus.withLockedValue { current in
            guard current != status else { return nil }
            defer { current = status }
            return current
        }
        guard let previous else { return }
        if status.isConnected, let start = status.sessionStart,
            !previous.isConnected || previous.sessionStart != start
        {
            let afterAnother = !previous.isConnected && metricTimings.hadSession
            emitMetrics { $0.sessionBegan(start, afterAnother: afterAnother) }
            metricTimings.hadSession = true
        }
        if let reason = status.reason {
            lastConnectionFailure.withLockedValue { $0 = reason }
        } else if status.isConnected {
            lastConnectionFailure.withLockedValue { $0 = nil }
        }
        logger.debug("status", metadata: ["status": "\(status)"])
        statusBroadcaster.yield(status)
        // Observers run on the callback queue, never on the client queue (they may call back into the client).
        userCode.run {
            NotificationCenter.default.post(
                name: .ddpClientStatusDidChange, object: self, userInfo: [DDPClient.statusUserInfoKey: status])
        }
    }
}
