import DDPTestServer
import Dispatch
import EJSON
import Foundation
import Logging
@_spi(Testing) import MeteorDDP
import TestSupport
import XCTest

/// The chaos soak: a fault-injecting proxy between the client and DDPTestServer drops connections (sometimes cutting a
/// frame mid-way), refuses them for a while and delays chunks, while the client makes a steady mix of stub inserts,
/// stub updates and plain calls (some `noRetry`, some `wait`) and the server writes on its own. After the faults stop
/// and everything settles: every call completed exactly once, the cache equals the server, every change notification
/// showed a state the server or a stub really had (never an older server state, never a removal the server did not
/// make), and no error was reported that the faults did not cause. It runs in both ``PendingStubMode``s; rebasing,
/// every notification must show a server state no older than the one shown with some of the pending bumps replayed
/// over it.
///
/// `MDDP_CHAOS_SECONDS` sets how long the faults last in each mode (default 8 s; CI runs a longer short mode, and 600
/// is the long run); `MDDP_CHAOS_SEED` replays a run's faults.
final class ChaosSoakTests: XCTestCase {
    private let collection = "items"

    func testTheCacheEqualsTheServerAndEveryNotificationIsRealUnderFaults() async throws {
        try await soak(.holdServerData)
    }

    /// The same with ``PendingStubMode/rebase``: every notification shows a server state with pending bumps replayed
    /// over it.
    func testRebasingStubsTheCacheEqualsTheServerAndEveryNotificationIsRealUnderFaults() async throws {
        try await soak(.rebase)
    }

    private func soak(_ mode: PendingStubMode) async throws {
        let environment = ProcessInfo.processInfo.environment
        let seconds = environment["MDDP_CHAOS_SECONDS"].flatMap(Double.init) ?? 8
        let seed = environment["MDDP_CHAOS_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64(UInt32.max))
        // Printed first: a run that fails or hangs part-way can be replayed with MDDP_CHAOS_SEED.
        print("chaos soak (\(mode)): seed \(seed), \(Int(seconds)) s of faults")
        let ledger = ChaosLedger(rebase: mode == .rebase)

        let server = DDPTestServer()
        try await server.start()
        defineServer(server, ledger: ledger)
        let proxy = FaultInjectingProxy(upstreamPort: server.port, seed: seed)
        let proxyPort = try await proxy.start()

        var configuration = DDPClient.Configuration()
        configuration.retryStrategy = RetryStrategy(baseTimeout: 20, exponent: 2, maxTimeout: 300, minTimeout: 10)
        configuration.connectTimeout = .seconds(2)
        configuration.pendingStubMode = mode
        // Sessions are resumed (the default); a call whose frame a dropped socket lost ends within the soak's wait.
        configuration.resumedCallTimeout = .seconds(5)
        if let path = environment["MDDP_CHAOS_TRACE"], let factory = TraceFileLogHandler.factory(path: path) {
            configuration.logger = Logger(label: "MeteorDDP", factory: factory)
        }
        let client = DDPClient(url: URL(string: "ws://127.0.0.1:\(proxyPort)/websocket")!, configuration: configuration)
        defineStubs(client, ledger: ledger)
        let observer = NotificationCenter.default.addObserver(
            forName: .databaseDidChange, object: client.database, queue: nil
        ) {
            [collection] notification in
            guard let changes = notification.userInfo?[DatabaseChanges.userInfoKey] as? DatabaseChanges else { return }
            ledger.notified(changes, collection: collection)
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        let errors = client.errors
        let errorTask = Task { for await error in errors { ledger.reported(error) } }
        let reconnects = Locked(0)
        let statuses = client.statusUpdates
        let statusTask = Task {
            for await status in statuses where status.isConnected { reconnects.mutate { $0 += 1 } }
        }

        client.connect()
        let subscription = client.subscribe(collection)

        // The load: 80 calls a second from the client, a server write every 40 ms, for `seconds`.
        let load = LoadGenerator(client: client, ledger: ledger, collection: collection, seed: seed)
        let serverWriter = ServerWriter(server: server, collection: collection, seed: seed &+ 1)
        load.start(interval: .microseconds(12_500))
        serverWriter.start(interval: .milliseconds(40))
        try await waitFor(seconds: seconds)
        load.stop()
        serverWriter.stop()
        proxy.faultsEnabled = false

        // Quiescence: every call completes, then one more call proves everything before it is in the cache.
        let diagnosis = {
            "client: \(client.stateSummary().prefix(3000))\n"
                + "server: \(self.serverEvidence(server, client))\nproxy: \(proxy.figures)"
        }
        do {
            try await withTimeout(60, "every call to complete") { await ledger.waitUntilEveryCallCompleted() }
        } catch {
            XCTFail(
                "calls hang after the faults stopped (seed \(seed)): "
                    + "\(ledger.pendingDescription.prefix(300))\n\(diagnosis())"
            )
            throw error
        }
        do {
            try await withTimeout(60, "the subscription to be ready") { try await subscription.ready() }
            _ = try await withTimeout(60, "the final call") { try await client.call("sync") }
        } catch {
            XCTFail("the client does not settle after the faults stopped (seed \(seed)): \(error)\n\(diagnosis())")
            throw error
        }

        let cache = Dictionary(
            uniqueKeysWithValues: client.database.collection(collection).documents.map {
                ($0.id, ChaosLedger.canonical($0.fields))
            })
        let (onServer, texts): ([String: String?], [String]) = server.perform {
            let documents = server.collection(collection).documents
            return (
                Dictionary(uniqueKeysWithValues: documents.map { ($0.key, ChaosLedger.canonical($0.value)) }),
                documents.values.compactMap { $0["text"]?.stringValue }
            )
        }
        // Each client insert carries its call's label: a label twice would be one call inserted twice.
        let duplicates = Dictionary(grouping: texts, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
        client.database.notificationQueue.sync {}
        client.database.observerQueue.sync {}
        let verdict = ledger.verdict(collection: collection)
        let figures = proxy.figures
        let connects = Dictionary(grouping: server.connectOutcomes, by: { "\($0)" }).mapValues(\.count)
            .sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        let runTwice = server.callsRunMoreThanOnce
        client.close()
        errorTask.cancel()
        statusTask.cancel()
        try await proxy.stop()
        try await server.stop()

        let differing = Set(cache.keys).union(onServer.keys).filter { cache[$0] != onServer[$0] }.sorted()
        print(
            """
            chaos soak (\(mode), seed \(seed), \(Int(seconds)) s of faults): \(verdict.calls) calls; \
            proxy: \(figures); sessions established: \(reconnects.value); \
            server connects: \(connects)
            outcomes: \
            \(verdict.outcomes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            documents: server \(onServer.count), cache \(cache.count), differing \(differing.count), \
            inserted twice \(duplicates.count); \
            notifications \(verdict.notifications), wrong \(verdict.wrongNotifications.count); \
            errors: \
            \(verdict.errorsByCode.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            """)
        XCTAssertTrue(verdict.notHanging, "every call completed")
        XCTAssertEqual(verdict.completedTwice, [], "no call completed twice")
        XCTAssertEqual(
            differing.prefix(10).map { key -> String in
                "\(key): cache \(cache[key].map { $0 ?? "?" } ?? "absent") "
                    + "server \(onServer[key].map { $0 ?? "?" } ?? "absent")"
            }, [], "cache == server")
        XCTAssertEqual(duplicates, [], "no insert made twice on the server")
        XCTAssertEqual(runTwice, [], "no call run twice by one session (a resumed session never gets a call again)")
        XCTAssertEqual(
            Array(verdict.wrongNotifications.prefix(10)), [], "\(verdict.wrongNotifications.count) wrong notifications")
        XCTAssertEqual(Array(verdict.unexpectedErrors.prefix(10)), [], "no error the faults did not cause")
        XCTAssertGreaterThan(figures.drops, 0, "the faults happened")
    }

    /// What the server received of the client's first pending call, for a soak that hangs.
    private func serverEvidence(_ server: DDPTestServer, _ client: DDPClient) -> String {
        let head = client.firstPendingCallID
        let received = server.receivedMessages
        let methods = received.compactMap { message -> String? in
            if case .method(let id, _, _, _) = message { return id }
            return nil
        }
        let connects = received.filter { if case .connect = $0 { return true } else { return false } }.count
        let receivedTimes = head.map { id in methods.filter { $0 == id }.count } ?? 0
        return
            "messages \(received.count), connects \(connects), methods \(methods.count), "
            + "last method ids \(methods.suffix(5)); "
            + "the first pending call \(head ?? "none") received \(receivedTimes) times"
    }

    // MARK: - The application

    private func defineServer(_ server: DDPTestServer, ledger: ChaosLedger) {
        server.observeDocumentChanges { [collection] name, id, after in
            if name == collection { ledger.serverChanged(id, to: after) }
        }
        server.publish(collection) { [collection] _ in [Cursor(collection: collection)] }
        server.method("items.add") { [collection] context in
            let id = context.randomID(forSequence: "/collection/\(collection)")
            return .string(
                try context.collection(collection).insert(["text": context.params.first ?? .null, "n": 0], id: id))
        }
        server.method("items.bump") { [collection] context in
            guard let id = context.params.first?.stringValue else {
                throw MeteorError(error: .number(400), reason: "Match failed")
            }
            let changed = try context.collection(collection).update(
                id, ["$inc": ["n": 1], "$set": ["by": context.params[1]]])
            return .number(Double(changed))
        }
        server.method("items.touch") { [collection] context in
            guard let id = context.params.first?.stringValue else { return nil }
            return .number(
                Double(try context.collection(collection).update(id, ["$set": ["touched": context.params[1]]])))
        }
        server.method("sync") { _ in nil }
    }

    private func defineStubs(_ client: DDPClient, ledger: ChaosLedger) {
        client.defineStub("items.add") { [collection] context in
            let items = context.collection(collection)
            guard let id = try items.insert(["text": context.params.first ?? .null, "n": 0]) else { return nil }
            ledger.stubInserted(id, items.document(id: id)?.fields)
            return .string(id)
        }
        client.defineStub("items.bump") { [collection] context in
            guard let id = context.params.first?.stringValue else { return nil }
            let items = context.collection(collection)
            let changed = try items.update(id, ["$inc": ["n": 1], "$set": ["by": context.params[1] ?? nil]])
            ledger.stubWrote(id, items.document(id: id)?.fields)
            return .number(Double(changed))
        }
    }

    /// Waits `seconds` of real time: the soak's length, not a synchronisation.
    private func waitFor(seconds: Double) async throws {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { continuation.resume() }
        }
    }
}

/// Makes calls at a steady rate from a timer: 35 % stub inserts, 35 % stub updates of a document in the cache,
/// 30 % plain calls that write on the server; 10 % of all with `noRetry`, 5 % with `wait`.
private final class LoadGenerator: @unchecked Sendable {
    // @unchecked because `random` and `count` are confined to the timer's queue.
    private let client: DDPClient
    private let ledger: ChaosLedger
    private let collection: String
    private let timer = RepeatingTimer(queue: DispatchQueue(label: "chaos.load"))
    private var random: SplitMix64
    private var count = 0

    init(client: DDPClient, ledger: ChaosLedger, collection: String, seed: UInt64) {
        self.client = client
        self.ledger = ledger
        self.collection = collection
        self.random = SplitMix64(seed: seed &* 31)
    }

    func start(interval: DispatchTimeInterval) { timer.start(interval: interval) { [self] in makeCall() } }

    func stop() { timer.stop() }

    private func makeCall() {
        count += 1
        let kind = random.nextDouble()
        let ids = client.database.collection(collection).documents.map(\.id)
        let target: EJSONValue = ids.isEmpty ? .null : .string(ids[Int(random.next() % UInt64(ids.count))])
        let (name, params): (String, [EJSONValue])
        if kind < 0.35 || ids.isEmpty {
            (name, params) = ("items.add", [.string("c\(count)")])
        } else if kind < 0.7 {
            (name, params) = ("items.bump", [target, .string("b\(count)")])
        } else {
            (name, params) = ("items.touch", [target, .string("t\(count)")])
        }
        let flavour = random.nextDouble()
        var options = MethodOptions(wait: flavour < 0.05, noRetry: flavour >= 0.05 && flavour < 0.15)
        // Some calls have a deadline (0.3–3 s, against drops every 0.5–3 s): they fail as `timedOut` when no result
        // comes in time, and the server may still run them.
        if flavour >= 0.15 && flavour < 0.25 { options.timeout = .milliseconds(300 + Int(random.next() % 2_700)) }
        let call = ledger.callStarted(name)
        if name == "items.bump", let id = target.stringValue { ledger.bumpStarted(call, id: id, by: params[1]) }
        do {
            try client.call(name, params: params, options: options) { [ledger] outcome in
                ledger.completed(call, outcome)
            }
        } catch {
            ledger.completed(call, .failure(error))
        }
    }
}

/// Writes on the server from a timer: updates of any document, inserts and removals of its own documents.
private final class ServerWriter: @unchecked Sendable {
    // @unchecked because `random` and `count` are confined to the server queue.
    private let server: DDPTestServer
    private let collection: String
    private let timer: RepeatingTimer
    private var random: SplitMix64
    private var count = 0

    init(server: DDPTestServer, collection: String, seed: UInt64) {
        self.server = server
        self.collection = collection
        self.random = SplitMix64(seed: seed)
        self.timer = RepeatingTimer(queue: server.queue)
    }

    func start(interval: DispatchTimeInterval) { timer.start(interval: interval) { [self] in write() } }

    func stop() { timer.stop() }

    private func write() {
        count += 1
        let items = server.collection(collection)
        let ids = Array(items.documents.keys)
        let kind = random.nextDouble()
        if kind < 0.25 || ids.isEmpty {
            _ = try? items.insert(["text": .string("s\(count)"), "n": 0], id: "srv\(count)")
        } else if kind < 0.4 {
            let own = ids.filter { $0.hasPrefix("srv") }
            if !own.isEmpty { items.remove(own[Int(random.next() % UInt64(own.count))]) }
        } else {
            _ = try? items.update(ids[Int(random.next() % UInt64(ids.count))], ["$inc": ["s": 1]])
        }
    }
}

/// A repeating timer on a serial queue; `stop()` returns once no firing can run any more.
private final class RepeatingTimer: @unchecked Sendable {
    // @unchecked because `timer` is confined to `queue`.
    private let queue: DispatchQueue
    private var timer: (any DispatchSourceTimer)?

    init(queue: DispatchQueue) {
        self.queue = queue
    }

    func start(interval: DispatchTimeInterval, _ fire: @escaping @Sendable () -> Void) {
        queue.sync {
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now(), repeating: interval)
            timer.setEventHandler(handler: fire)
            self.timer = timer
            timer.activate()
        }
    }

    func stop() {
        queue.sync {
            timer?.cancel()
            timer = nil
        }
    }
}
