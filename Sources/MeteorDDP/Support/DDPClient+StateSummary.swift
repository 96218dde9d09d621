/// A one-paragraph summary of the client's internal state, for tests that find a client stuck (the chaos soak prints
/// it when the client does not settle). Internal: not an API.
extension DDPClient {
    func stateSummary() -> String {
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
}
