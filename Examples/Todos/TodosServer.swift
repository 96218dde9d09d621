import DDPTestServer
import EJSON
import Foundation
import MeteorDDP

/// The embedded todos backend: Meteor's classic Todos app (public lists, private lists, todos) on DDPTestServer.
enum TodosServer {
    static func start(latency: Duration, port: Int = 0) async throws -> DDPTestServer {
        var configuration = DDPTestServer.Configuration()
        configuration.port = port
        let server = DDPTestServer(configuration: configuration)
        try await server.start()
        server.methodLatency = latency
        let ada = server.createUser(username: "ada", email: "ada@example.com", password: "password")
        server.perform {
            let lists = server.collection("lists")
            let todos = server.collection("todos")
            for (index, (name, owner)) in [
                ("Groceries", nil), ("Meteor Principles", nil), ("Ada's secrets", Optional(ada))
            ].enumerated() {
                let listID = "list\(index + 1)"
                var fields: EJSONObject = ["name": .string(name), "incompleteCount": 2]
                if let owner { fields["userId"] = .string(owner) }
                _ = try? lists.insert(fields, id: listID)
                for (n, text) in ["first thing", "second thing"].enumerated() {
                    _ = try? todos.insert(
                        [
                            "listId": .string(listID), "text": .string("\(name): \(text)"), "checked": false,
                            "createdAt": .date(millisecondsSince1970: 1_700_000_000_000 + Double(n) * 1000)
                        ], id: "\(listID)-todo\(n + 1)")
                }
            }
        }
        // Publications return selector-filtered cursors, matched by the client's own selector engine.
        server.publish("lists.public") { _ in
            [try Cursor(collection: "lists", selector: ["userId": ["$exists": false]])]
        }
        server.publish("lists.private") { context in
            guard let user = context.userID else { return [] }
            return [try Cursor(collection: "lists", selector: ["userId": .string(user)])]
        }
        server.publish("todos.inList") { context in
            [try Cursor(collection: "todos", selector: ["listId": .string(context.params.first?.stringValue ?? "")])]
        }
        server.method("todos.insert") { context in
            guard let listID = context.params.first?.stringValue,
                let text = context.params.dropFirst().first?.stringValue
            else {
                throw MeteorError(error: .string("validation-error"), reason: "todos.insert takes a list id and a text")
            }
            let id = context.randomID(forSequence: "/collection/todos")
            try context.collection("todos").insert(
                ["listId": .string(listID), "text": .string(text), "checked": false, "createdAt": .date(Date())], id: id
            )
            try context.collection("lists").update(listID, ["$inc": ["incompleteCount": 1]])
            return .string(id)
        }
        server.method("todos.setChecked") { context in
            guard let id = context.params.first?.stringValue,
                case .bool(let checked)? = context.params.dropFirst().first
            else {
                throw MeteorError(
                    error: .string("validation-error"), reason: "todos.setChecked takes an id and a boolean")
            }
            guard let todo = context.collection("todos").document(id) else {
                throw MeteorError(error: .number(404), reason: "No such todo")
            }
            if todo["checked"] != .bool(checked), let listID = todo["listId"]?.stringValue {
                try context.collection("lists").update(listID, ["$inc": ["incompleteCount": .number(checked ? -1 : 1)]])
            }
            return .number(Double(try context.collection("todos").update(id, ["$set": ["checked": .bool(checked)]])))
        }
        server.method("todos.remove") { context in
            guard let id = context.params.first?.stringValue else {
                throw MeteorError(error: .string("validation-error"), reason: "todos.remove takes an id")
            }
            return .number(Double(context.collection("todos").remove(id)))
        }
        return server
    }
}

/// The client-side stubs of the todos methods: the same writes, made locally at once.
enum TodosStubs {
    static func define(on client: DDPClient) {
        // Typed parameters: a call with a missing or mistyped one does not run the stub (the error is logged) and
        // still goes to the server, which answers with its own error.
        client.defineStub("todos.insert") { (context, listID: String, text: String) -> String? in
            let todo = Todo(_id: nil, listId: listID, text: text, checked: false, createdAt: Date())
            let id = try context.collection("todos", as: Todo.self).insert(todo)
            try context.collection("lists").update(listID, ["$inc": ["incompleteCount": 1]])
            return id
        }
        client.defineStub("todos.setChecked") { (context, id: String, checked: Bool) -> Int in
            let todos = context.collection("todos", as: Todo.self)
            if let todo = try todos.document(id: id), todo.checked != checked {
                try context.collection("lists").update(
                    todo.listId, ["$inc": ["incompleteCount": .number(checked ? -1 : 1)]])
            }
            return try todos.update(id, ["$set": ["checked": .bool(checked)]])
        }
        client.defineStub("todos.remove") { (context, id: String) -> Int in
            context.collection("todos").remove(id)
        }
    }
}
