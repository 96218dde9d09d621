import Dispatch

/// Hooks for the package's own integration tests and tools, behind the `Testing` SPI
/// (`@_spi(Testing) import MeteorDDP`): not part of the API, no stability promised.
extension DDPClient {
    /// A one-paragraph summary of the client's internal state, for tests that find a client stuck (the chaos soak
    /// prints it when the client does not settle).
    @_spi(Testing)
    public func stateSummary() -> String {
        queue.sync {
            let methods = core.session.methods
            let invocations = methods.invocations.values.sorted { MethodCoordinator.idOrder($0.id, $1.id) }.prefix(20)
                .map { invocation -> String in
                    "\(invocation.id) \(invocation.name) sent=\(methods.isSent(invocation.id)) "
                        + "result=\(invocation.result != nil) visible=\(invocation.dataVisible)"
                }
            let quiescence =
                core.session.quiescence.map { "held \($0.messages.count) (resetting \($0.resetting))" } ?? "none"
            let connectionState = connection == nil ? "none" : "open"
            let hooksRunning = core.session.reconnectHooksRunning.map(String.init) ?? "no"
            let blocks = methods.blocks.map { block -> String in "\(block.wait ? "wait " : "")\(block.methodIDs)" }
            return """
                state \(core.machine.state); connection \(connectionState) (generation \(core.connectionGeneration)); \
                timers \(timers.keys.map { "\($0)" }.sorted()); inbox \(inbox.summary); \
                quiescence \(quiescence), subscriptions reviving \(core.session.subscriptions.isReviving), \
                methods blocking \(core.session.methodsBlockingQuiescence.sorted()); \
                reconnect hooks running \(hooksRunning); after-update \(core.session.afterUpdate.summary); \
                store idle \(store.isIdle), buffer holding \(updateBuffer.isHolding); user code \(userCode.summary); \
                calls (\(methods.invocations.count)): \(invocations); blocks \(blocks)
                """
        }
    }

    /// The id of the first call still waiting for its result (the head of the first method block), if any.
    @_spi(Testing)
    public var firstPendingCallID: String? {
        queue.sync { core.session.methods.blocks.first?.methodIDs.first }
    }

    /// Waits until everything already handed to the client queue has run, data frames waiting in the inbox for their
    /// batch included (a deterministic hook for tests: their drain happens now instead of a moment later).
    /// While a new socket's reconnect hooks run, it also waits for them and for what the client does after them.
    @_spi(Testing)
    public func waitUntilIdle() {
        dispatchPrecondition(condition: .notOnQueue(queue))
        dispatchPrecondition(condition: .notOnQueue(callbackQueue))
        while queue.sync(execute: {
            drainInbox()
            return core.reconnectHooksAreRunning
        }) {
            callbackQueue.sync {}
        }
    }

    /// Runs `hook` on the transport's thread each time the frames the client has not handled yet reach their bound
    /// (the reader then waits for the client queue).
    @_spi(Testing)
    public func onBacklogBound(_ hook: @escaping @Sendable () -> Void) {
        backlogBoundHook.withLockedValue { $0 = hook }
    }

    /// How many ``waitForPendingWrites()`` calls wait.
    @_spi(Testing)
    public var pendingWritesWaitCount: Int {
        dispatchPrecondition(condition: .notOnQueue(queue))
        return queue.sync { core.pendingWritesWaits.count }
    }
}
