// A client process for the offline kill test (IntegrationTests/Offline): it makes stub calls with a store, offline
// or online, until it is killed; or, in `verify` mode, restores, reconnects and prints what it ends with.
//
//   OfflineProbe offline <store> <calls>          calls addItem(1…calls) without ever connecting (its stub inserts
//                                                 {n, c: 0}), and bump(id) after every third (its stub does
//                                                 $inc c on that item); after every tenth addItem, waits until the
//                                                 store is flushed and says `durable N`
//   OfflineProbe online  <store> <calls> <port>   the same, connected and subscribed to "items"
//   OfflineProbe online-early <store> <calls> <port>
//                                                 the same, but the calls are made right after connect() and
//                                                 subscribe(), without waiting for the subscription: the first ones
//                                                 go out before it (queued calls are sent first), so their `updated`
//                                                 comes before their documents; says `subscribed` once it is ready
//   OfflineProbe logout  <store> <calls> <port>   logged in as "ada-lovelace-1815" and subscribed to "myItems"
//                                                 (hers), makes the calls (each item also gets the note
//                                                 "ada-private-note-4471"), waits until they completed, logs out,
//                                                 says `logged out` and waits to be killed
//   OfflineProbe verify  <store> <port>           prints what was restored, reconnects, waits for every restored
//                                                 call's outcome, prints the outcomes, the cache and the keys notified
//
// Output lines: `called N`, `completed N`, `durable N`, `subscribed`, `logged out`, `restored {json}` (docs, and calls
// as [id, name, first param]), `outcome ID KIND SOURCE`, `cache {json}`, `notified {json}`.
import EJSON
import Foundation
import MeteorDDP

/// One line, written at once (unbuffered: a SIGKILL loses nothing printed).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("usage: OfflineProbe offline|online|verify <store> …\n".utf8))
    exit(2)
}
let mode = arguments[1]
let store = URL(fileURLWithPath: arguments[2])

var configuration = DDPClient.Configuration()
configuration.persistence = .sqlite(at: store)
configuration.persistence?.reconciliationDelay = .milliseconds(500)
let port = Int(arguments.last!) ?? 0
let client = DDPClient(url: URL(string: "ws://127.0.0.1:\(port)/websocket")!, configuration: configuration)
client.defineStub("addItem") { context in
    var fields: EJSONObject = ["n": context.params.first ?? .null, "c": 0]
    if context.params.count > 1 { fields["note"] = context.params[1] }
    return try context.collection("items").insert(fields).map { .string($0) }
}
client.defineStub("bump") { context in
    guard let id = context.params.first?.stringValue else { return nil }
    return .number(Double(try context.collection("items").update(id, ["$inc": ["c": 1]])))
}

func items() -> EJSONValue {
    .array(
        client.database.collection("items").documents.sorted { $0.id < $1.id }.map { document in
            var fields = document.fields
            fields["_id"] = .string(document.id)
            return .object(fields)
        })
}

func logIn() async throws {
    _ = try await client.login(username: "ada-lovelace-1815", password: "secret")
}

switch mode {
case "offline", "online", "online-early", "logout":
    let calls = Int(arguments[3]) ?? 0
    var subscription: Subscription?
    if mode == "online" {
        client.connect()
        subscription = client.subscribe("items")
        try await subscription!.ready()
    } else if mode == "online-early" {
        client.connect()
        let early = client.subscribe("items")
        subscription = early
        Task {
            try await early.ready()
            say("subscribed")
        }
    } else if mode == "logout" {
        client.connect()
        try await logIn()
        subscription = client.subscribe("myItems")
        try await subscription!.ready()
    }
    let completed = DispatchGroup()
    for n in 1...calls {
        completed.enter()
        let params: [EJSONValue] =
            mode == "logout" ? [.number(Double(n)), "ada-private-note-4471"] : [.number(Double(n))]
        let id = try client.call("addItem", params: params, options: MethodOptions(returnStubValue: true)) { result in
            if case .success = result { say("completed \(n)") }
            completed.leave()
        }
        say("called \(n)")
        if n % 3 == 0, let id {
            completed.enter()
            _ = try client.call("bump", params: [id]) { _ in completed.leave() }
        }
        if n % 10 == 0 {
            // Every call made so far is on disk now (or completed and gone from it).
            await client.flushStore()
            say("durable \(n)")
        }
        // Calls spread over time (0–3 ms apart), so that kills land before, during and after the store's writes.
        // This paces the program the test kills; nothing waits on it.
        usleep(UInt32.random(in: 0...3_000))
    }
    say("done")
    if mode == "logout" {
        await withCheckedContinuation { continuation in completed.notify(queue: .global()) { continuation.resume() } }
        try await client.logout()
        say("logged out")
    }
    // Waits to be killed.
    DispatchSemaphore(value: 0).wait()

case "verify":
    let restored: EJSONValue = [
        "docs": items(),
        "calls": .array(
            client.restoredCalls.calls.map { call in
                [.string(call.id), .string(call.name), call.params.first ?? .null]
            })
    ]
    say("restored \(EJSON.stringify(restored))")
    let notified = NotifiedKeys()
    let changes = client.database.changes
    let watcher = Task {
        for await change in changes {
            for key in change.affectedDocumentKeys { notified.insert(key.documentID) }
        }
    }
    client.connect()
    let subscription = client.subscribe("items")
    for await outcome in client.restoredCalls {
        let kind: String
        switch outcome.result {
        case .succeeded: kind = "succeeded"
        case .failed(let error as MeteorError): kind = "failed:\(error.error)"
        case .failed(let error): kind = "failed:\((error as? MethodError)?.kind.rawValue ?? "\(error)")"
        case .alreadyApplied: kind = "alreadyApplied"
        }
        say("outcome \(outcome.call.id) \(kind) \(outcome.source)")
    }
    try await subscription.ready()
    say("cache \(EJSON.stringify(items()))")
    // A marker written last: once the watcher has seen it, every notification before it was seen too.
    let marker = DocumentKey(collectionName: "probe", documentID: "marker")
    client.database.apply(.added(marker, [:]))
    await notified.waitFor(marker.documentID)
    say("notified \(EJSON.stringify(.array(notified.sorted.map { .string($0) })))")
    watcher.cancel()
    exit(0)

default:
    FileHandle.standardError.write(Data("unknown mode \(mode)\n".utf8))
    exit(2)
}

/// Keys seen in change notifications.
final class NotifiedKeys: @unchecked Sendable {
    private let lock = NSLock()
    private var keys = Set<String>()

    private var waiter: (key: String, continuation: CheckedContinuation<Void, Never>)?

    func insert(_ key: String) {
        let resume: CheckedContinuation<Void, Never>? = lock.withLock {
            keys.insert(key)
            guard let waiter, waiter.key == key else { return nil }
            self.waiter = nil
            return waiter.continuation
        }
        resume?.resume()
    }

    func waitFor(_ key: String) async {
        await withCheckedContinuation { continuation in
            let seen: Bool = lock.withLock {
                if keys.contains(key) { return true }
                waiter = (key, continuation)
                return false
            }
            if seen { continuation.resume() }
        }
    }
    var sorted: [String] { lock.withLock { keys.filter { $0 != "marker" }.sorted() } }
}
