import DDPTestServer
import Foundation
import Logging
import MeteorDDP
import MeteorDDPTesting

/// The names the documentation's examples take for granted. Examples are compiled, never run.
struct DocExamplePrelude: @unchecked Sendable {
    let client: DDPClient
    var database: Database { client.database }
    /// The typed collections of the relationship examples.
    var lists: TypedCollection<TodoList> { client.collection("lists", as: TodoList.self) }
    var todos: TypedCollection<Todo> { client.collection("todos", as: Todo.self) }
    let server: DDPTestServer
    let logger: Logger
}

// The app's own names the examples use (an example that declares one shadows it).

/// The server's URL.
let serverURL = URL(string: "ws://127.0.0.1:3000/websocket")!
/// A list's id.
let listID = "list1"
/// A document and its key.
let document = Document(id: "lovelace", fields: ["name": "Ada", "score": 10])
let key = DocumentKey(collectionName: "players", documentID: "lovelace")

/// A player and a todo as an app models them.
struct Player: Codable, Sendable, Identifiable {
    var _id: String?
    var name: String
    var score: Int
    var id: String { _id ?? "" }
}

struct Todo: Codable, Sendable {
    var _id: String?
    var listId: String
    var text: String
    var checked: Bool?
    var createdAt: Date?
}

let todo = Todo(_id: nil, listId: "list1", text: "milk", checked: false, createdAt: nil)

/// The README's relationship example: a todo's `listId` names its list.
struct TodoList: Codable, Sendable {
    var _id: String?
    var name: String
}

/// Where an app shows things.
func show(_ items: Any...) {}
func showProblem(_ items: Any...) {}
func render(_ items: Any...) {}

/// A table view that applies a live query's index diffs.
struct TableView: Sendable {
    func apply(_ diff: LiveQueryDiff) {}
    func apply(_ diff: LiveQueryDiff, animating: Bool) {}
}

let tableView = TableView()

/// A token from an e-mail's link, and the new password the app asks for.
let token = "token-from-the-link"
func askForNewPassword() -> String { "battery staple" }

/// The code the user reads in an authenticator app.
func askForCode() -> String { "123456" }

/// What an OAuth flow's redirect gave the app.
let credentialToken = "credential-token"
let credentialSecret = "credential-secret"

/// The app's login screen, with a message saying why it is shown.
func showLogin(message: String?) {}
