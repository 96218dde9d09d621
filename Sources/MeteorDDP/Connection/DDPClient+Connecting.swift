import Dispatch
import EJSON
import Foundation
import NIOConcurrencyHelpers
import NIOPosix

// MARK: - Connecting

extension DDPClient {
    /// Starts connecting (and keeps reconnecting with back-off until ``disconnect()``).
    public func connect() {
        queue.async { self.handle(.connectRequested) }
    }

    /// Connects and returns once the DDP session is established (the server sent `connected`).
    ///
    /// For example:
    /// ```swift
    /// try await client.connect(timeout: .seconds(10))
    /// ```
    /// An unreachable server, a wrong URL or a refused upgrade does not wait forever: after `timeout` (on the client's
    /// scheduler) it throws with the last attempt's reason. The client goes on trying in the background, with
    /// back-off, as after ``connect()``; ``disconnect()`` stops it.
    /// - Throws: ``DDPError`` of code ``DDPError/Code/connectTimedOut`` (its message and
    ///   ``DDPError/transportError`` give the last attempt's reason: refused, TLS, the HTTP status of a refused
    ///   upgrade), ``DDPError/Code/versionNegotiationFailed`` at once when the server wants a DDP version this client
    ///   does not speak, ``DDPError/Code/clientClosed`` on a closed client, or `CancellationError`.
    public func connect(timeout: Duration) async throws {
        let outcome = OneShot<Void>()
        let updates = statusUpdates
        let watcher = Task {
            for await status in updates {
                switch status.state {
                case .connected: outcome.fulfill(.success(()))
                case .failed:
                    outcome.fulfill(.failure(status.reason ?? DDPError(.connectTimedOut, "the connection failed")))
                case .offline, .connecting, .waiting: continue
                }
            }
            outcome.fulfill(.failure(DDPError.clientClosed()))
        }
        let deadline = scheduler.schedule(after: timeout) {
            let reason = self.lastConnectionFailure.withLockedValue { $0 }
            let message =
                "not connected within \(timeout)" + (reason.map { "; the last attempt failed: \($0.message)" } ?? "")
            outcome.fulfill(.failure(DDPError(.connectTimedOut, message, transportError: reason?.transportError)))
        }
        defer {
            watcher.cancel()
            deadline.cancel()
        }
        connect()
        try await outcome.value
    }

    /// Disconnects and stops retrying. Subscriptions and pending methods are kept for the next ``connect()``.
    public func disconnect() {
        queue.async { self.handle(.disconnectRequested) }
    }

    /// Retries at once when waiting for the back-off; connects again after ``disconnect()`` or a failure.
    public func reconnect() {
        queue.async { self.handle(.reconnectRequested) }
    }

    /// Tells the client the network is reachable again: a client waiting for its back-off, or offline because the
    /// connection was lost while the network was unreachable, connects at once (not after ``disconnect()``).
    public func networkDidBecomeReachable() {
        queue.async { self.handle(.networkReachabilityChanged(reachable: true)) }
    }

    /// Tells the client the network is unreachable: a lost connection then goes offline instead of retrying
    /// until ``networkDidBecomeReachable()``.
    public func networkDidBecomeUnreachable() {
        queue.async { self.handle(.networkReachabilityChanged(reachable: false)) }
    }

    /// Disconnects for good: pending calls fail with ``MethodError/Kind/clientClosed``, subscriptions stop (their
    /// `ready()` throws ``SubscriptionStoppedError``), and ``statusUpdates``, ``errors`` and ``accountUpdates`` end.
    /// What is asked afterwards is answered the same way at once: a call fails with `clientClosed` (its stub does not
    /// run), a new subscription is stopped, and ``connect()``, ``reconnect()`` and the other connection requests do
    /// nothing.
    ///
    /// `close()` does not wait for the offline store: what was committed just before may still be on its way to the
    /// disk. Before a process exits, `await client.flushStore()` (``logout()`` itself waits for its erasure).
    public func close() {
        queue.async { self.handle(.closeRequested) }
    }

    /// Runs `hook` on every new socket, right after `connect` and before unanswered methods and subscriptions are
    /// sent again (Meteor's `DDP.onReconnect`): methods it calls go out first. A hook with the same name replaces the
    /// previous one; hooks run in name order, after the resume login.
    ///
    /// Hooks run on the callback queue and may call any API. Until they return, the new session's messages wait (in
    /// order, up to ``Configuration/maxMessagesHeldForQuiescence``; past it the client stops waiting for the hooks and
    /// reports ``DDPError/Code/limitReached``): keep them short.
    public func onReconnect(_ name: String, _ hook: @escaping @Sendable () -> Void) {
        queue.async { self.handle(.reconnectHookSet(name: name, hook: hook)) }
    }

    /// Sends a message if the socket is open; otherwise drops it (everything that matters is re-sent on reconnect).
    func send(_ message: ClientMessage) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let connection, core.isSocketOpen else {
            logger.trace("not sent (socket closed)", metadata: ["msg": "\(message.name)"])
            return
        }
        let frame = EJSON.stringify(message.ejsonValue)
        countSent(frame)
        if logger.logLevel <= .trace, logThrottle.admitFrame("sent", message.name) {
            logger.trace("sent", metadata: ["frame": "\(loggable(frame, message: message))"])
        }
        connection.send(frame)
    }

    /// Counts a frame written (its bytes before deflating).
    func countSent(_ frame: String) {
        guard metrics.isRecording else { return }
        let bytes = Int64(frame.utf8.count)
        emitMetrics {
            $0.framesSent.increment()
            $0.bytesSent.increment(by: bytes)
        }
    }

    /// Opens a transport connection whose events carry `generation` (the core's, for the connection attempt).
    func openTransport(generation: Int) {
        // The connection's events come one at a time: its frames share one decoding scratch.
        let scratch = DocumentMessageDecoder.Scratch()
        let parseOptions = EJSON.ParseOptions(refusesUnregisteredTypes: configuration.refusesUnregisteredEJSONTypes)
        // A WebSocket's reader waits at the gate (suspended) while the backlog is at its bound; another transport's
        // thread is held instead.
        let gated = transport as? any GatedReadTransport
        let readGate = gated.map { _ in ReadGate() }
        let onEvent: @Sendable (TransportEvent) -> Void = { [weak self] event in
            guard let self else { return }
            // Parse on the transport's thread, then hand over in order, in batches.
            let item: IncomingInbox.Item
            var waiter = FrameWaiter.client
            if case .text(let frame) = event {
                // Counted here, reported from the client queue (a metrics backend is the app's code: never run on
                // the reader's thread, which may be an event loop's).
                if self.metrics.isRecording { self.receivedTraffic.frameRead(bytes: frame.utf8.count) }
                let parsed = DDPClient.parse(frame, scratch: scratch, options: parseOptions)
                waiter = self.waiter(of: parsed)
                item = .message(parsed, generation: generation)
            } else {
                item = .transport(event, generation: generation)
            }
            switch self.inbox.append(consume item, waitedOn: waiter.waitsOnFrame) {
            case .none: return
            case .holdLimitReached: return self.queue.async { self.handle(.reconnectHooksHoldLimitReached) }
            case .drainSoon:
                // Data that no caller waits on: handled on the client queue a moment later, with whatever arrives
                // meanwhile, while this thread reads and decodes on. On a flood, decoding, the session's routing and
                // the cache's applying each have a thread, and a batch costs one thread wake-up, not one per frame.
                // On the client's scheduler, so tests choose when it falls due (`waitUntilIdle` drains at once).
                // Weak: a pending batch must not keep a closed client alive (a manual clock may never let it fall due).
                _ = self.scheduler.schedule(after: IncomingInbox.dataBatchingDelay) { [weak self] in
                    guard let self else { return }
                    if self.isOnClientQueue { self.drainInbox() } else { self.queue.async { self.drainInbox() } }
                }
                return
            case .handOver:
                // Something waits on this frame (with everything before it): handed to the client queue now, with the
                // frames that arrive before it runs. The transport's thread (an event loop) runs none of the client's
                // work and reads on. A task awaiting the call drains them itself: one thread wake-up, not two.
                if case .task(let waiter) = waiter, waiter.requestDrain() { return }
                return self.queue.async { self.drainInbox() }
            case .drainNow where self.isOnClientQueue:
                // Delivered from the client queue itself (a transport closing as the client closes it): later.
                return self.queue.async { self.drainInbox() }
            case .drainNow:
                break
            }
            // The backlog is at its bound: nothing more is read until the client queue has handled it (backpressure
            // on a server sending faster than the client applies). A WebSocket's reader waits at the gate, its event
            // loop free; another transport's thread waits for the drain (it runs none of it: a serial queue runs the
            // work queued before a `sync` on its own thread).
            self.backlogBoundHook.withLockedValue { $0 }?()
            if let readGate {
                readGate.close()
                return self.queue.async {
                    self.drainInbox()
                    readGate.open()
                }
            }
            self.queue.async { self.drainInbox() }
            self.queue.sync {}
        }
        if let gated {
            connection = gated.connect(readGate: readGate, onEvent: onEvent)
        } else {
            connection = transport.connect(onEvent: onEvent)
        }
    }

    /// Who waits on a parsed frame.
    enum FrameWaiter {
        /// Nobody: data (`added`, `changed`, `removed`), the server's pings (their pongs go out with the batch, a
        /// moment later: the server's heartbeat allows seconds), and a `result` or `updated` for no call awaiting one
        /// (``awaitedCalls``: reported with the batch).
        case nobody
        /// The client: a call with a completion handler, a subscription's `ready`, a connection event, …
        case client
        /// A task awaiting a call (``CallWaiter``).
        case task(CallWaiter)

        var waitsOnFrame: Bool {
            if case .nobody = self { return false }
            return true
        }
    }

    private func waiter(of parsed: borrowing Result<IncomingMessage, DDPProtocolViolation>) -> FrameWaiter {
        switch parsed {
        case .success(.document), .success(.message(.removed)), .success(.message(.ping)): .nobody
        case .success(.message(.result(let id, _, _))):
            awaitedCalls.withLockedValue { awaited in
                guard let entry = awaited[id] else { return .nobody }
                return entry.map { .task($0) } ?? .client
            }
        case .success(.message(.updated(let ids))):
            awaitedCalls.withLockedValue { awaited in
                var found = FrameWaiter.nobody
                for id in ids {
                    guard let entry = awaited[id] else { continue }
                    if let waiter = entry { return .task(waiter) }
                    found = .client
                }
                return found
            }
        default: .client
        }
    }

    // MARK: - Timers

    func schedule(_ purpose: ClientCore.Timer, after delay: Duration) {
        cancelTimer(purpose)
        timerGeneration += 1
        let generation = timerGeneration
        let action = scheduler.schedule(after: delay) { [weak self] in
            guard let self else { return }
            self.queue.async { self.timerFired(purpose, generation: generation) }
        }
        timers[purpose] = (generation, action)
    }

    func cancelTimer(_ purpose: ClientCore.Timer) {
        timers.removeValue(forKey: purpose)?.action.cancel()
    }

    private func timerFired(_ purpose: ClientCore.Timer, generation: Int) {
        guard timers[purpose]?.generation == generation else { return }
        timers.removeValue(forKey: purpose)
        handle(.timerFired(purpose))
    }
}
