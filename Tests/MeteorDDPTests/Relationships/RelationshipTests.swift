import EJSON
import XCTest

@_spi(Testing) @testable import MeteorDDP

/// Relationships read from the cache: a to-one through a reference field, its inverse, many-to-many through an array
/// of ids, with string and ObjectID references; a reference to a document the cache does not hold reads as absent.
final class RelationshipTests: XCTestCase {
    private struct TodoList: Codable, Sendable, Equatable {
        var _id: String?
        var name: String
    }

    private struct Todo: Codable, Sendable, Equatable {
        var _id: String?
        var text: String
    }

    private struct Post: Codable, Sendable, Equatable {
        var _id: String?
        var title: String
    }

    private struct Tag: Codable, Sendable, Equatable {
        var _id: ObjectID
        var label: String
    }

    private let red = ObjectID("5f1d7a3c9e1b2a0012345601")!
    private let blue = ObjectID("5f1d7a3c9e1b2a0012345602")!

    /// Two lists (one empty), four todos (two in Home, one in a list the cache does not hold, one with no list), two
    /// posts (one tagged with ObjectIDs, one whose tags are not an array).
    private func harnessWithData() -> ClientHarness {
        let harness = ClientHarness()
        harness.establishConnection()
        let messages: [ServerMessage] = [
            .added(collection: "lists", id: "home", fields: ["name": "Home"]),
            .added(collection: "lists", id: "work", fields: ["name": "Work"]),
            .added(collection: "todos", id: "t1", fields: ["text": "milk", "listId": "home"]),
            .added(collection: "todos", id: "t2", fields: ["text": "bread", "listId": "home"]),
            .added(collection: "todos", id: "t3", fields: ["text": "report", "listId": "gone"]),
            .added(collection: "todos", id: "t4", fields: ["text": "loose", "listId": .null]),
            .added(collection: "tags", id: red.hexString, fields: ["label": "red"]),
            .added(collection: "tags", id: blue.hexString, fields: ["label": "blue"]),
            .added(
                collection: "posts", id: "p1",
                fields: [
                    "title": "colours",
                    "tagIds": [
                        blue.ejsonValue, ObjectID("5f1d7a3c9e1b2a00123456ff")!.ejsonValue, red.ejsonValue,
                        blue.ejsonValue
                    ]
                ]),
            .added(collection: "posts", id: "p2", fields: ["title": "plain", "tagIds": "not an array"])
        ]
        for message in messages { harness.receive(message) }
        harness.flushData()
        return harness
    }

    func testAToOneReadsTheReferencedDocumentAndADanglingOrMissingReferenceAsAbsent() throws {
        let harness = harnessWithData()
        let todos = harness.client.collection("todos", as: Todo.self)
        let lists = harness.client.collection("lists", as: TodoList.self)
        let listOfTodo = todos.toOne(lists, idIn: "listId")
        XCTAssertEqual(try listOfTodo.related(to: "t1"), [TodoList(_id: "home", name: "Home")])
        XCTAssertEqual(try listOfTodo.related(to: "t3"), [], "a list the cache does not hold")
        XCTAssertEqual(try listOfTodo.related(to: "t4"), [], "a null reference")
        XCTAssertEqual(try listOfTodo.related(to: "nope"), [], "an absent source document")
        let all = try listOfTodo.find([:], FindOptions(sort: ["text": 1]))
        XCTAssertEqual(all.map(\.value.text), ["bread", "loose", "milk", "report"])
        XCTAssertEqual(all.map { $0.related.map(\.name) }, [["Home"], [], ["Home"], []])
        XCTAssertEqual(all.map(\.id), ["t2", "t4", "t1", "t3"])
    }

    func testTheInverseGroupsTheReferringDocumentsSortedAsAsked() throws {
        let harness = harnessWithData()
        let todos = harness.client.collection("todos", as: Todo.self)
        let lists = harness.client.collection("lists", as: TodoList.self)
        let todosOfList = lists.toMany(todos, referencedBy: "listId")
        let entries = try todosOfList.find(
            [:], FindOptions(sort: ["name": 1]), relatedOptions: FindOptions(sort: ["text": 1]))
        XCTAssertEqual(entries.map(\.value.name), ["Home", "Work"])
        XCTAssertEqual(entries.map { $0.related.map(\.text) }, [["bread", "milk"], []])
        XCTAssertEqual(
            try todosOfList.related(to: "home", FindOptions(sort: ["text": -1])).map(\.text), ["milk", "bread"])
        XCTAssertEqual(
            try todosOfList.find(["name": "Work"]).map(\.related), [[]], "a selector picks the source documents")
    }

    func testManyToManyKeepsTheArraysOrderOnceEachAndSkipsWhatIsAbsent() throws {
        let harness = harnessWithData()
        let posts = harness.client.collection("posts", as: Post.self)
        let tags = harness.client.collection("tags", as: Tag.self, idGeneration: .objectID)
        let tagsOfPost = posts.toMany(tags, idsIn: "tagIds")
        XCTAssertEqual(
            try tagsOfPost.related(to: "p1"), [Tag(_id: blue, label: "blue"), Tag(_id: red, label: "red")],
            "ObjectID references in the array's order, the absent one skipped, blue once")
        XCTAssertEqual(try tagsOfPost.related(to: "p2"), [], "a field that is not an array holds no references")
    }

    /// References are read before the source documents are projected: a projection leaving the reference out still
    /// finds the related documents.
    func testAProjectionOfTheSourcesKeepsTheirReferences() throws {
        let harness = harnessWithData()
        struct TextOnly: Codable, Sendable { var text: String }
        let todos = harness.client.collection("todos", as: TextOnly.self)
        let lists = harness.client.collection("lists", as: TodoList.self)
        let entries = try todos.toOne(lists, idIn: "listId").find(
            ["_id": "t1"], FindOptions(fields: ["text": 1]))
        XCTAssertEqual(entries.map(\.value.text), ["milk"])
        XCTAssertEqual(entries.map { $0.related.map(\.name) }, [["Home"]])
    }

    /// The inverse is Meteor's `find({listId: id})`: the documents naming the id, whether or not the cache holds the
    /// document they name; `options` window them.
    func testTheInverseOfAnIDTheCacheDoesNotHoldStillFindsWhatNamesIt() throws {
        let harness = harnessWithData()
        let todos = harness.client.collection("todos", as: Todo.self)
        let lists = harness.client.collection("lists", as: TodoList.self)
        let todosOfList = lists.toMany(todos, referencedBy: "listId")
        XCTAssertEqual(try todosOfList.related(to: "gone").map(\.text), ["report"])
        XCTAssertEqual(
            try todosOfList.related(to: "home", FindOptions(sort: ["text": 1], limit: 1)).map(\.text), ["bread"])
    }

    /// A number is an id too (Meteor's `_id` may be one): a numeric reference finds the document whose `_id` is that
    /// number, and not the one whose string id has the same digits.
    func testANumericReferenceFindsTheDocumentWithThatNumberAsItsID() throws {
        let harness = harnessWithData()
        harness.receive(frame: #"{"msg":"added","collection":"lists","id":"~7","fields":{"name":"Seven"}}"#)
        harness.receive(.added(collection: "lists", id: "7", fields: ["name": "String seven"]))
        harness.receive(.added(collection: "todos", id: "t6", fields: ["text": "numbered", "listId": 7]))
        harness.flushData()
        // A model without `_id`: a number does not decode as the String the other tests' lists declare.
        struct Named: Codable, Sendable { var name: String }
        let todos = harness.client.collection("todos", as: Todo.self)
        let lists = harness.client.collection("lists", as: Named.self)
        XCTAssertEqual(try todos.toOne(lists, idIn: "listId").related(to: "t6").map(\.name), ["Seven"])
    }

    func testAnObjectIDReferenceFindsItsDocument() throws {
        let harness = harnessWithData()
        harness.receive(.added(collection: "posts", id: "p3", fields: ["title": "one tag", "tagId": red.ejsonValue]))
        harness.flushData()
        let posts = harness.client.collection("posts", as: Post.self)
        let tags = harness.client.collection("tags", as: Tag.self, idGeneration: .objectID)
        XCTAssertEqual(try posts.toOne(tags, idIn: "tagId").related(to: "p3").map(\.label), ["red"])
    }

    func testARelatedDocumentThatDoesNotDecodeThrows() {
        let harness = harnessWithData()
        harness.receive(.added(collection: "lists", id: "bad", fields: ["title": "no name"]))
        harness.receive(.added(collection: "todos", id: "t5", fields: ["text": "odd", "listId": "bad"]))
        harness.flushData()
        let todos = harness.client.collection("todos", as: Todo.self)
        let lists = harness.client.collection("lists", as: TodoList.self)
        XCTAssertThrowsError(try todos.toOne(lists, idIn: "listId").related(to: "t5")) { error in
            XCTAssertTrue(error is DecodingError, "\(error)")
        }
    }

    /// A todo moved to another list (its reference changed) leaves one group and joins the other.
    func testAMovedReferenceLeavesOneGroupAndJoinsTheOther() throws {
        let harness = harnessWithData()
        let todos = harness.client.collection("todos", as: Todo.self)
        let lists = harness.client.collection("lists", as: TodoList.self)
        let todosOfList = lists.toMany(todos, referencedBy: "listId")
        harness.receive(.changed(collection: "todos", id: "t1", fields: ["listId": "work"], cleared: []))
        harness.flushData()
        let entries = try todosOfList.find([:], FindOptions(sort: ["name": 1]))
        XCTAssertEqual(entries.map { $0.related.map(\.text) }, [["bread"], ["milk"]], "t1 moved from Home to Work")
    }
}
