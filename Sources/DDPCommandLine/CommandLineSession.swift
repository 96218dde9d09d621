import EJSON
import Foundation
import MeteorDDP

/// The `ddp` tool's interpreter: one DDP client, and the commands a Meteor developer pokes a server with.
///
/// Commands (arguments are EJSON where they parse, else strings):
/// - `sub NAME [ARGS…]`, `unsub NAME`: subscribe (waits for `ready`) and stop;
/// - `call NAME [ARGS…]`: call a method and print its result;
/// - `login --email E --password P`, `login --username U --password P`, `logout`;
/// - `watch COLLECTION [SELECTOR]`, `unwatch COLLECTION`: print changes as they come, field by field, before → after;
/// - `list COLLECTION [SELECTOR]`: print the matching documents;
/// - `stats`: the client's diagnostics, the figures that changed since the last `stats` highlighted;
/// - `status`, `help`, `quit`.
public final class CommandLineSession: @unchecked Sendable {
    // @unchecked because `subscriptions`, `watchers` and `lastDiagnostics` are only touched by `run(_:)` and
    // `showStats(every:times:redraw:)`, which callers await one at a time.

    public let client: DDPClient
    let output: CommandOutput
    private var subscriptions: [String: Subscription] = [:]
    private var watchers: [String: Task<Void, Never>] = [:]
    /// The diagnostics `stats` showed last: the next one highlights what changed since.
    private var lastDiagnostics: ClientDiagnostics?

    public init(client: DDPClient, output: CommandOutput) {
        self.client = client
        self.output = output
    }

    public static let help = """
        Commands:
          sub NAME [ARGS…]             subscribe and wait until ready
          unsub NAME                   stop a subscription
          call NAME [ARGS…]            call a method and print its result
          login --email E --password P log in (or --username U --password P)
          logout                       log out
          change-password OLD NEW      change the password (others log out)
          forgot-password EMAIL        ask for a reset e-mail
          reset-password TOKEN NEW     set a password with an e-mail's token
          logout-others                log out every other session
          status                       print the connection status
          stats                        print the client's diagnostics
          watch COLLECTION [SELECTOR]  print changes as they come
          unwatch COLLECTION           stop watching
          list COLLECTION [SELECTOR]   print the matching documents
          quit                         leave
        Arguments are EJSON where they parse (1, true, "quoted", {"a": 1}), else
        strings. A JSON object or array is taken as typed, spaces included; one
        that does not parse is refused. Quote a string with '…'.
        """

    /// Runs one command line; returns `false` for `quit`. Errors are printed, never thrown.
    public func run(_ line: String) async -> Bool {
        let words: [String]
        do {
            words = try CommandTokenizer.words(line)
        } catch {
            fail("\(error)")
            return true
        }
        guard let command = words.first, !command.hasPrefix("#") else { return true }
        let arguments = Array(words.dropFirst())
        do {
            switch command {
            case "quit", "exit": return false
            case "help": output.event("help", text: Self.help)
            case "status": printStatus()
            case "stats": try await printStats(clearingScreen: false)
            case "sub": try await subscribe(arguments)
            case "unsub": unsubscribe(arguments)
            case "call": try await call(arguments)
            case "login": try await login(arguments)
            case "logout":
                try await client.logout()
                output.event("logout", text: "logged out")
            case "change-password":
                guard arguments.count == 2 else {
                    fail("usage: change-password OLD NEW")
                    return true
                }
                try await client.changePassword(old: arguments[0], new: arguments[1])
                output.event("password", text: "password changed; other sessions logged out")
            case "forgot-password":
                guard arguments.count == 1 else {
                    fail("usage: forgot-password EMAIL")
                    return true
                }
                try await client.forgotPassword(email: arguments[0])
                output.event("password", text: "reset e-mail sent to \(arguments[0])")
            case "reset-password":
                guard arguments.count == 2 else {
                    fail("usage: reset-password TOKEN NEW")
                    return true
                }
                let account = try await client.resetPassword(token: arguments[0], newPassword: arguments[1])
                output.event(
                    "login", ["userID": .string(account.userID)], text: "password set; logged in as \(account.userID)")
            case "logout-others":
                try await client.logoutOtherClients()
                output.event("logout", text: "every other session logged out")
            case "watch": try watch(arguments)
            case "unwatch": unwatch(arguments)
            case "list": try list(arguments)
            default: fail("unknown command '\(command)' (try help)")
            }
        } catch {
            fail("\(error)")
        }
        return true
    }

    /// Stops every watcher and subscription, and closes the client.
    public func close() {
        for (_, watcher) in watchers { watcher.cancel() }
        watchers.removeAll()
        for (_, subscription) in subscriptions { subscription.stop() }
        subscriptions.removeAll()
        client.close()
    }

    /// `ddp stats`: the client's diagnostics every `interval`, `times` times (`nil`: until the task is cancelled),
    /// the figures that changed since the previous one highlighted; with `redraw`, each replaces the last on the
    /// screen (a terminal).
    public func showStats(every interval: Duration, times: Int?, redraw: Bool) async throws {
        var shown = 0
        while times.map({ shown < $0 }) ?? true {
            if shown > 0 { try await Task.sleep(for: interval) }
            try await printStats(clearingScreen: redraw)
            shown += 1
        }
    }

    // MARK: - Commands

    private func printStats(clearingScreen: Bool) async throws {
        let snapshot = await client.diagnostics()
        defer { lastDiagnostics = snapshot }
        if case .json = output.style {
            return output.event("stats", ["diagnostics": try DiagnosticsView.json(snapshot)], text: "")
        }
        let lines = DiagnosticsView.render(snapshot, previous: lastDiagnostics, output: output)
        // Home and clear, then the snapshot: a terminal shows one screen that changes in place. Elsewhere a blank line
        // parts one snapshot from the next.
        let lead = clearingScreen ? "\u{1B}[H\u{1B}[2J" : lastDiagnostics == nil ? "" : "\n"
        output.event("stats", text: lead + lines.joined(separator: "\n"))
    }

    private func printStatus() {
        let status = client.status
        output.event(
            "status", ["status": .string("\(status.state)"), "connected": .bool(status.isConnected)],
            text: "status: \(status)")
    }

    private func subscribe(_ arguments: [String]) async throws {
        guard let name = arguments.first else { return fail("usage: sub NAME [ARGS…]") }
        let params = try arguments.dropFirst().map(CommandTokenizer.argument)
        let subscription = client.subscribe(name, params: Array(params))
        subscriptions[name]?.stop()
        subscriptions[name] = subscription
        try await subscription.ready()
        output.event(
            "ready", ["name": .string(name), "id": .string(subscription.id)],
            text: output.coloured("ready", .green) + " \(name)")
    }

    private func unsubscribe(_ arguments: [String]) {
        guard let name = arguments.first, let subscription = subscriptions.removeValue(forKey: name) else {
            return fail("usage: unsub NAME (a subscription made with sub)")
        }
        subscription.stop()
        output.event("unsub", ["name": .string(name)], text: "stopped \(name)")
    }

    private func call(_ arguments: [String]) async throws {
        guard let name = arguments.first else { return fail("usage: call NAME [ARGS…]") }
        let params = try arguments.dropFirst().map(CommandTokenizer.argument)
        let result = try await client.call(name, params: Array(params))
        output.event(
            "result", ["method": .string(name), "result": result ?? .null],
            text: output.coloured("result", .green) + " \(name): \(result.map { EJSON.stringify($0) } ?? "undefined")")
    }

    private func login(_ arguments: [String]) async throws {
        var options: [String: String] = [:]
        var index = 0
        while index + 1 < arguments.count, arguments[index].hasPrefix("--") {
            options[String(arguments[index].dropFirst(2))] = arguments[index + 1]
            index += 2
        }
        guard let password = options["password"] else {
            return fail("usage: login --email E --password P | --username U --password P")
        }
        let account: Account
        if let email = options["email"] {
            account = try await client.login(email: email, password: password)
        } else if let username = options["username"] {
            account = try await client.login(username: username, password: password)
        } else {
            return fail("usage: login --email E --password P | --username U --password P")
        }
        output.event("login", ["userId": .string(account.userID)], text: "logged in as \(account.userID)")
    }

    private func watch(_ arguments: [String]) throws {
        guard let collection = arguments.first else { return fail("usage: watch COLLECTION [SELECTOR]") }
        let selector = try MongoSelector(arguments.count > 1 ? try CommandTokenizer.argument(arguments[1]) : [:])
        watchers[collection]?.cancel()
        // Registered now, not when the task starts: a change right after `watch` returns is printed too.
        let changes = client.database.changes.makeAsyncIterator()
        let output = self.output
        watchers[collection] = Task {
            var changes = changes
            while let batch = await changes.next() {
                for details in batch.documentChangeDetails where details.key.collectionName == collection {
                    let before = details.documentBefore.map { selector.matches($0) } ?? false
                    let after = details.documentAfter.map { selector.matches($0) } ?? false
                    guard before || after else { continue }
                    Self.printChange(details, output: output)
                }
            }
        }
        output.event("watch", ["collection": .string(collection)], text: "watching \(collection)")
    }

    private static func printChange(_ details: DocumentChangeDetails, output: CommandOutput) {
        let before = details.fieldsBefore ?? [:]
        let after = details.fieldsAfter ?? [:]
        let kind: String
        switch details.changeType {
        case .add: kind = "added"
        case .update: kind = "changed"
        case .remove: kind = "removed"
        }
        var fields: EJSONObject = [:]
        var parts: [String] = []
        for name in details.changedFields.keys.sorted() {
            let old = before[name]
            let new = after[name]
            fields[name] = ["before": old ?? .null, "after": new ?? .null]
            let oldText = old.map { EJSON.stringify($0) } ?? "—"
            let newText = new.map { EJSON.stringify($0) } ?? "—"
            parts.append("\(name): " + output.coloured(oldText, .red) + " → " + output.coloured(newText, .green))
        }
        let colour: CommandOutput.Colour = kind == "added" ? .green : kind == "removed" ? .red : .yellow
        output.event(
            kind,
            [
                "collection": .string(details.key.collectionName), "id": .string(details.key.documentID),
                "fields": .object(fields)
            ],
            text: output.coloured(kind, colour) + " \(details.key.collectionName)/\(details.key.documentID) "
                + parts.joined(separator: ", "))
    }

    private func unwatch(_ arguments: [String]) {
        guard let collection = arguments.first, let watcher = watchers.removeValue(forKey: collection) else {
            return fail("usage: unwatch COLLECTION (a collection watched with watch)")
        }
        watcher.cancel()
        output.event("unwatch", ["collection": .string(collection)], text: "stopped watching \(collection)")
    }

    private func list(_ arguments: [String]) throws {
        guard let collection = arguments.first else { return fail("usage: list COLLECTION [SELECTOR]") }
        let selector = arguments.count > 1 ? try CommandTokenizer.argument(arguments[1]) : [:]
        let documents = try client.database.collection(collection).find(selector, FindOptions(sort: ["_id": 1]))
        for document in documents {
            output.event(
                "document", ["collection": .string(collection), "document": document.ejsonValue],
                text: output.coloured(Self.describeID(document), .cyan) + " "
                    + EJSON.stringify(.object(document.fields)))
        }
        output.event(
            "count", ["collection": .string(collection), "count": .number(Double(documents.count))],
            text: "\(documents.count) documents")
    }

    /// A document's id as Meteor shows it: `ObjectID("…")` for an ObjectID, the id itself for a string.
    static func describeID(_ document: Document) -> String {
        switch document.idValue {
        case .string(let id): return id
        case let value: return value.objectIDValue?.description ?? EJSON.stringify(value)
        }
    }

    private func fail(_ message: String) {
        output.event("error", ["message": .string(message)], text: output.coloured("error", .red) + ": \(message)")
    }
}
