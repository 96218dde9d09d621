import Dispatch
import EJSON

// MARK: - Receiving

extension DDPClient {
    /// Handles one parsed frame from the current connection, on the client queue (``drainInbox()`` checks it once per
    /// batch).
    func handleIncoming(_ parsed: consuming Result<IncomingMessage, DDPProtocolViolation>, generation: Int) {
        guard generation == core.connectionGeneration else { return }
        // Any frame proves the connection is alive (heartbeat.js `messageReceived`).
        performHeartbeat(core.heartbeat.messageReceived())
        // Consumed: each message moves on down the path, its strings and fields never copied (retained) on the way.
        switch consume parsed {
        case .failure(let violation):
            report(.protocolViolation(violation))
            if let unreadable = violation.unreadable, core.machine.version != nil {
                handleUnreadable(unreadable, violation)
            }
        case .success(.message(let message)):
            logger.trace("received", metadata: ["frame": "\(loggable(message))"])
            handle(message)
        case .success(let document):
            logger.trace("received", metadata: ["msg": "\(document.name)"])
            handleSessionData(document)
        }
    }

    /// Data and method messages: for the established session only. Inlined, as the two steps after it: a message
    /// passed down by value is copied from frame to frame (~100 bytes, several `memcpy`s per frame on a flood).
    @inline(__always)
    private func handleSessionData(_ message: consuming IncomingMessage) {
        guard core.machine.version != nil else {
            reportUnexpected(message.serverMessage, "data before the session was established")
            return
        }
        handleSessionMessage(message)
    }

    private func handle(_ message: ServerMessage) {
        switch message {
        case .connected(let session):
            let actions = core.machine.receivedConnected(session: session)
            if actions.isEmpty {
                reportUnexpected(message, "the session is already established or no connect was sent")
            }
            perform(actions)
        case .failed(let version):
            let actions = core.machine.receivedFailed(version: version)
            if actions.isEmpty {
                reportUnexpected(message, "no connect is pending")
            }
            perform(actions)
        case .ping(let id):
            if configuration.respondToPings { send(.pong(id: id)) }
        case .pong:
            break
        case .error(let reason, let offending):
            report(.serverError(reason: reason, offendingMessage: offending.map { EJSON.stringify($0) }))
        case .added, .changed, .removed, .ready, .nosub, .updated, .result:
            handleSessionData(.message(message))
        }
    }

    func reportUnexpected(_ message: ServerMessage, _ reason: String) {
        report(
            .protocolViolation(
                DDPProtocolViolation(.unexpected(message: message.name, reason: reason), message: message.ejsonValue)))
    }
}
