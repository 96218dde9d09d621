import DDPTestServer
import EJSON
import Foundation
import MeteorDDP

/// The interactive todos client: commands in, consolidated change notifications and timings out.
final class TodosApp: @unchecked Sendable {
    // @unchecked because `listSubscriptions` is only touched from the command loop (one task).
    let client: DDPClient
    /// Whether the client stays offline (`--offline`): subscriptions and calls do not wait for the server.
    let offline: Bool
    /// The embedded server, if any: it keeps its e-mails, and `forgot-password` shows the link it sent.
    let server: DDPTestServer?
    private var listSubscriptions: [String: Subscription] = [:]
    private let start = Date()

    init(client: DDPClient, offline: Bool = false, server: DDPTestServer? = nil) {
        self.client = client
        self.offline = offline
        self.server = server
    }

    static let help = """
        commands:
          lists                      the lists you can see (public, and private ones once logged in)
          todos <list>               subscribe to a list and show its todos
          add <list> <text…>         add a todo (the stub shows it at once; the server confirms later)
          check <todo> | uncheck <todo>
          remove <todo>
          login <email> <password>   (the embedded server has ada@example.com / password)
          logout
          change-password <old> <new>  (other sessions of the user are logged out)
          forgot-password <email>    (the embedded server shows the link it would e-mail)
          reset-password <token> <new>
          logout-others              log out every other session of the user
          status                     connection status
          restored                   wait until every call restored from the store (--store) has its outcome
          quit
        """

    func log(_ text: String) {
        print(String(format: "[%7.3f s] ", Date().timeIntervalSince(start)) + text)
    }

    /// Prints every consolidated change set, as it is committed.
    func watchChanges() -> Task<Void, Never> {
        Task { [client] in
            for await changes in client.database.changes {
                for details in changes.documentChangeDetails {
                    let fields = details.changedFields.sorted { $0.key < $1.key }.map { name, change -> String in
                        switch change {
                        case .set(let value): return "\(name)=\(EJSON.stringify(value))"
                        case .removed: return "\(name) removed"
                        }
                    }
                    self.log("change: \(details.changeType) \(details.key) \(fields.joined(separator: ", "))")
                }
            }
        }
    }

    func run(_ line: String) async -> Bool {
        let words = line.split(separator: " ").map(String.init)
        guard let command = words.first else { return true }
        do {
            switch command {
            case "help": print(Self.help)
            case "quit", "exit": return false
            case "status": log("status: \(client.status)")
            case "restored":
                for await _ in client.restoredCalls {}
                log("every restored call has its outcome (\(client.restoredCalls.calls.count) in all)")
            case "lists": showLists()
            case "todos":
                guard words.count == 2 else { return usage("todos <list>") }
                try await showTodos(words[1])
            case "add":
                guard words.count >= 3 else { return usage("add <list> <text>") }
                try await add(list: words[1], text: words.dropFirst(2).joined(separator: " "))
            case "check", "uncheck":
                guard words.count == 2 else { return usage("\(command) <todo>") }
                try await timed("todos.setChecked", [.string(words[1]), .bool(command == "check")])
            case "remove":
                guard words.count == 2 else { return usage("remove <todo>") }
                try await timed("todos.remove", [.string(words[1])])
            case "login":
                guard words.count == 3 else { return usage("login <email> <password>") }
                let account = try await client.login(email: words[1], password: words[2])
                log("logged in as \(account.userID)")
                let privateLists = client.subscribe("lists.private")
                try await privateLists.ready()
                listSubscriptions["private"] = privateLists
                showLists()
            case "logout":
                try await client.logout()
                log("logged out")
            case "change-password":
                guard words.count == 3 else { return usage("change-password <old> <new>") }
                try await client.changePassword(old: words[1], new: words[2])
                log("password changed; other sessions of the user are logged out")
            case "forgot-password":
                guard words.count == 2 else { return usage("forgot-password <email>") }
                try await client.forgotPassword(email: words[1])
                log(
                    "reset e-mail sent"
                        + (server?.sentEmails.last.map { " (its link: \($0.url); reset-password \($0.token) <new>)" }
                            ?? ""))
            case "reset-password":
                guard words.count == 3 else { return usage("reset-password <token> <new>") }
                let account = try await client.resetPassword(token: words[1], newPassword: words[2])
                log("password set; logged in as \(account.userID)")
            case "logout-others":
                try await client.logoutOtherClients()
                log("every other session of the user is logged out")
            default:
                print("unknown command \(command); try help")
            }
        } catch {
            log("error: \(error)")
        }
        return true
    }

    private func usage(_ text: String) -> Bool {
        print("usage: \(text)")
        return true
    }

    func showLists() {
        for list in (try? client.collection("lists").find([:], FindOptions(sort: ["name": 1]))) ?? [] {
            let owner = list["userId"] == nil ? "public" : "private"
            log(
                "list \(list.id): \(list["name"]?.stringValue ?? "?") "
                    + "(\(owner), \(list["incompleteCount"]?.intValue ?? 0) open)"
            )
        }
    }

    /// Subscribes to a list's todos (once): without it the server never sends them, and a todo added by a stub would
    /// be rolled back when the server confirms (the cache shows what your subscriptions publish).
    private func subscribeToList(_ listID: String) async throws {
        guard listSubscriptions[listID] == nil else { return }
        let sub = client.subscribe("todos.inList", params: [.string(listID)])
        if !offline { try await sub.ready() }
        listSubscriptions[listID] = sub
    }

    private func showTodos(_ listID: String) async throws {
        try await subscribeToList(listID)
        // A list's todos through the relationship (Meteor's `Todos.find({listId})`), decoded as `Todo`s.
        let todos = try todosOfList.related(to: listID, FindOptions(sort: ["createdAt": 1]))
        for todo in todos where todo.checked != true {
            log("  [ ] \(todo._id ?? "?"): \(todo.text)")
        }
        let done = todos.count { $0.checked == true }
        if done > 0 { log("  (\(done) checked)") }
    }

    /// Lists and their todos: each todo's `listId` names its list.
    private var todosOfList: Relationship<TodoList, Todo> {
        client.collection("lists", as: TodoList.self).toMany(
            client.collection("todos", as: Todo.self), referencedBy: "listId")
    }

    private func add(list: String, text: String) async throws {
        try await subscribeToList(list)
        try await timed("todos.insert", [.string(list), .string(text)])
    }

    /// Calls a method, showing when its stub's effect was visible locally and when the server confirmed it.
    private func timed(_ method: String, _ params: [EJSONValue]) async throws {
        let started = DispatchTime.now()
        // Meteor 3's callAsync: the stub's value at once, the server's result after `result` and `updated`.
        let call = client.callAsync(method, params: params)
        let local = try? await call.stubValue
        let localMicros = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1000
        log(
            String(
                format: "local:  %@ applied by its stub in %.0f µs (returned %@)", method, localMicros,
                local?.description ?? "nothing"))
        if offline {
            log("offline: \(method) is queued (on disk with --store) and goes to the server once connected")
            return
        }
        do {
            let value = try await call.value
            let millis = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1_000_000
            log(
                String(
                    format: "server: %@ confirmed after %.1f ms (result %@)", method, millis,
                    value == .null ? "none" : value.description))
        } catch let error as MeteorError {
            let millis = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1_000_000
            log(
                String(
                    format: "server: %@ refused after %.1f ms: %@ (the stub's change was rolled back)", method, millis,
                    String(describing: error)))
        }
    }
}

/// A list as the app reads it.
struct TodoList: Codable, Sendable {
    var _id: String?
    var name: String
}

/// A todo as the app reads it (Meteor's todos example schema).
struct Todo: Codable, Sendable {
    var _id: String?
    var listId: String
    var text: String
    var checked: Bool?
    var createdAt: Date?
}
