import Dispatch

// MARK: - Session hooks for subscriptions, methods and data

extension DDPClient {
    /// A fresh socket is open and `connect` was just sent (LC `onReset`): outstanding methods and
    /// subscriptions are re-sent from here.
    func sessionDidReset() {
        dispatchPrecondition(condition: .onQueue(queue))
    }

    /// The server sent `connected` (LC `_livedata_connected`).
    func sessionDidConnect(isReconnect: Bool) {
        dispatchPrecondition(condition: .onQueue(queue))
    }

    /// The session ended (connection lost or disconnected).
    func sessionDidDisconnect() {
        dispatchPrecondition(condition: .onQueue(queue))
    }

    /// A data or method message of the established session.
    func handleSessionMessage(_ message: ServerMessage) {
        dispatchPrecondition(condition: .onQueue(queue))
        logger.trace("no handler for session message", metadata: ["msg": "\(message.name)"])
    }
}
