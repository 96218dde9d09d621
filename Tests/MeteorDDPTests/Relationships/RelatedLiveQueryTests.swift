import EJSON
import XCTest

@_spi(Testing) @testable import MeteorDDP

/// Live related queries: a result of sources with their related documents changes when either side changes, a
/// reference moves, or a related document comes or goes; one snapshot per transaction, each document version decoded
/// once.
final class RelatedLiveQueryTests: XCTestCase {
    private struct TodoList: Codable, Sendable, Equatable {
        var _id: String?
        var name: String
    }

    private struct Todo: Codable, Sendable, Equatable {
        var _id: String?
        var text: String
    }

    private struct Tag: Codable, Sendable, Equatable {
        var _id: ObjectID
        var label: String
    }

    private struct Post: Codable, Sendable, Equatable {
        var _id: String?
        var title: String
    }

    private func harness(_ messages: [ServerMessage]) -> ClientHarness {
        let harness = ClientHarness()
        harness.establishConnection()
        for message in messages { harness.receive(message) }
        harness.flushData()
        return harness
    }

    private func transaction(_ harness: ClientHarness, _ messages: [ServerMessage]) {
        for message in messages { harness.receive(message) }
        harness.flushData()
    }

    private let homeAndWork: [ServerMessage] = [
        .added(collection: "lists", id: "home", fields: ["name": "Home"]),
        .added(collection: "lists", id: "work", fields: ["name": "Work"]),
        .added(collection: "todos", id: "t1", fields: ["text": "milk", "listId": "home"]),
        .added(collection: "todos", id: "t2", fields: ["text": "bread", "listId": "home"]),
        .added(collection: "todos", id: "t3", fields: ["text": "report", "listId": "work"]),
        .added(collection: "todos", id: "t4", fields: ["text": "orphan", "listId": "later"])
    ]

    func testAListsTodosFollowTodosChangedMovedAddedAndRemovedOneSnapshotPerTransaction() async throws {
        let harness = harness(homeAndWork)
        let lists = harness.client.collection("lists", as: TodoList.self)
        let todos = harness.client.collection("todos", as: Todo.self)
        let live = try lists.toMany(todos, referencedBy: "listId").observe(
            [:], FindOptions(sort: ["name": 1]), relatedOptions: FindOptions(sort: ["text": 1]))
        var snapshots = live.snapshots.makeAsyncIterator()
        let first = try await snapshots.next()
        XCTAssertEqual(first?.ids, ["home", "work"])
        XCTAssertEqual(first?.values.map { $0.related.map(\.text) }, [["bread", "milk"], ["report"]])
        XCTAssertEqual(first?.diff, LiveQueryDiff())
        XCTAssertEqual(live.decodeCount, 5, "two lists and the three todos they hold")

        transaction(harness, [.changed(collection: "todos", id: "t1", fields: ["text": "oat milk"], cleared: [])])
        let edited = try await snapshots.next()
        XCTAssertEqual(edited?.values[0].related.map(\.text), ["bread", "oat milk"])
        XCTAssertEqual(edited?.diff, LiveQueryDiff(updated: [0]))
        XCTAssertEqual(live.decodeCount, 6, "one changed todo, one decode")

        // A todo moved to another list leaves one entry and joins the other, in one snapshot.
        transaction(harness, [.changed(collection: "todos", id: "t2", fields: ["listId": "work"], cleared: [])])
        let moved = try await snapshots.next()
        XCTAssertEqual(moved?.values.map { $0.related.map(\.text) }, [["oat milk"], ["bread", "report"]])
        XCTAssertEqual(moved?.diff, LiveQueryDiff(updated: [0, 1]))

        // A todo added and one removed in one transaction: one snapshot.
        transaction(
            harness,
            [
                .added(collection: "todos", id: "t5", fields: ["text": "eggs", "listId": "home"]),
                .removed(collection: "todos", id: "t3")
            ])
        let addedAndRemoved = try await snapshots.next()
        XCTAssertEqual(addedAndRemoved?.values.map { $0.related.map(\.text) }, [["eggs", "oat milk"], ["bread"]])
        XCTAssertEqual(addedAndRemoved?.diff, LiveQueryDiff(updated: [0, 1]))

        // The list an orphan names arrives: its entry comes with the todo already there.
        transaction(harness, [.added(collection: "lists", id: "later", fields: ["name": "Later"])])
        let arrived = try await snapshots.next()
        XCTAssertEqual(arrived?.ids, ["home", "later", "work"])
        XCTAssertEqual(arrived?.values[1].related.map(\.text), ["orphan"])
        XCTAssertEqual(arrived?.diff, LiveQueryDiff(inserted: [1]))

        // A list removed: its entry goes; its todos now name a list the cache does not hold.
        transaction(harness, [.removed(collection: "lists", id: "home")])
        let removed = try await snapshots.next()
        XCTAssertEqual(removed?.ids, ["later", "work"])
        XCTAssertEqual(removed?.diff, LiveQueryDiff(removed: [0]))
        live.stop()
    }

    func testTransactionsThatChangeNoEntryPublishNothing() async throws {
        let harness = harness(homeAndWork)
        let lists = harness.client.collection("lists", as: TodoList.self)
        let todos = harness.client.collection("todos", as: Todo.self)
        let live = try lists.toMany(todos, referencedBy: "listId").observe(["name": "Home"])
        var snapshots = live.snapshots.makeAsyncIterator()
        _ = try await snapshots.next()
        // Neither concerns Home's entry: a todo of Work, a document of another collection.
        transaction(harness, [.changed(collection: "todos", id: "t3", fields: ["text": "memo"], cleared: [])])
        transaction(harness, [.added(collection: "other", id: "x", fields: [:])])
        transaction(harness, [.changed(collection: "todos", id: "t1", fields: ["done": true], cleared: [])])
        let next = try await snapshots.next()
        XCTAssertEqual(next?.diff, LiveQueryDiff(updated: [0]), "the first snapshot after the seed is Home's change")
        XCTAssertEqual(live.decodeCount, 4, "Home, its two todos, and t1's new version")
        live.stop()
    }

    func testAToOneFollowsItsTargetAndADanglingReferenceReadsAsAbsent() async throws {
        let harness = harness(homeAndWork)
        let lists = harness.client.collection("lists", as: TodoList.self)
        let todos = harness.client.collection("todos", as: Todo.self)
        let live = try todos.toOne(lists, idIn: "listId").observe([:], FindOptions(sort: ["text": 1]))
        var snapshots = live.snapshots.makeAsyncIterator()
        let first = try await snapshots.next()
        XCTAssertEqual(first?.ids, ["t2", "t1", "t4", "t3"])
        XCTAssertEqual(first?.values.map { $0.related.map(\.name) }, [["Home"], ["Home"], [], ["Work"]])
        XCTAssertEqual(live.decodeCount, 6, "four todos and two lists, Home once")

        // A list renamed: every todo naming it is updated, in one snapshot, and the list decoded once.
        transaction(harness, [.changed(collection: "lists", id: "home", fields: ["name": "House"], cleared: [])])
        let renamed = try await snapshots.next()
        XCTAssertEqual(renamed?.values.map { $0.related.map(\.name) }, [["House"], ["House"], [], ["Work"]])
        XCTAssertEqual(renamed?.diff, LiveQueryDiff(updated: [0, 1]))
        XCTAssertEqual(live.decodeCount, 7)

        // A reference changed to a dangling one, and the dangling one's target arriving.
        transaction(harness, [.changed(collection: "todos", id: "t3", fields: ["listId": "later"], cleared: [])])
        let dangling = try await snapshots.next()
        XCTAssertEqual(dangling?.values[3].related, [])
        XCTAssertEqual(dangling?.diff, LiveQueryDiff(updated: [3]))
        transaction(harness, [.added(collection: "lists", id: "later", fields: ["name": "Later"])])
        let arrived = try await snapshots.next()
        XCTAssertEqual(arrived?.values.map { $0.related.map(\.name) }, [["House"], ["House"], ["Later"], ["Later"]])
        XCTAssertEqual(arrived?.diff, LiveQueryDiff(updated: [2, 3]))
        live.stop()
    }

    func testManyToManyWithObjectIDsKeepsTheArraysOrderAndFollowsTags() async throws {
        let red = ObjectID("5f1d7a3c9e1b2a0012345601")!
        let blue = ObjectID("5f1d7a3c9e1b2a0012345602")!
        let harness = harness([
            .added(collection: "tags", id: red.hexString, fields: ["label": "red"]),
            .added(collection: "tags", id: blue.hexString, fields: ["label": "blue"]),
            .added(
                collection: "posts", id: "p1", fields: ["title": "one", "tagIds": [blue.ejsonValue, red.ejsonValue]]),
            .added(collection: "posts", id: "p2", fields: ["title": "two", "tagIds": [red.ejsonValue]])
        ])
        let posts = harness.client.collection("posts", as: Post.self)
        let tags = harness.client.collection("tags", as: Tag.self)
        let live = try posts.toMany(tags, idsIn: "tagIds").observe([:], FindOptions(sort: ["title": 1]))
        var snapshots = live.snapshots.makeAsyncIterator()
        let first = try await snapshots.next()
        XCTAssertEqual(first?.values.map { $0.related.map(\.label) }, [["blue", "red"], ["red"]])
        XCTAssertEqual(live.decodeCount, 4, "red is decoded once though two posts hold it")

        transaction(
            harness, [.changed(collection: "tags", id: red.hexString, fields: ["label": "crimson"], cleared: [])])
        let relabelled = try await snapshots.next()
        XCTAssertEqual(relabelled?.values.map { $0.related.map(\.label) }, [["blue", "crimson"], ["crimson"]])
        XCTAssertEqual(relabelled?.diff, LiveQueryDiff(updated: [0, 1]))
        XCTAssertEqual(live.decodeCount, 5)

        transaction(
            harness, [.changed(collection: "posts", id: "p2", fields: ["tagIds": [blue.ejsonValue]], cleared: [])])
        let retagged = try await snapshots.next()
        XCTAssertEqual(retagged?.values.map { $0.related.map(\.label) }, [["blue", "crimson"], ["blue"]])
        XCTAssertEqual(retagged?.diff, LiveQueryDiff(updated: [1]))

        transaction(harness, [.removed(collection: "tags", id: blue.hexString)])
        let untagged = try await snapshots.next()
        XCTAssertEqual(untagged?.values.map { $0.related.map(\.label) }, [["crimson"], []])
        XCTAssertEqual(untagged?.diff, LiveQueryDiff(updated: [0, 1]))
        live.stop()
    }

    func testASlowConsumerGetsTheNewestResultWithTheDiffFromWhatItTookLast() async throws {
        let harness = harness(homeAndWork)
        let lists = harness.client.collection("lists", as: TodoList.self)
        let todos = harness.client.collection("todos", as: Todo.self)
        let live = try lists.toMany(todos, referencedBy: "listId").observe([:], FindOptions(sort: ["name": 1]))
        var snapshots = live.snapshots.makeAsyncIterator()
        _ = try await snapshots.next()
        transaction(harness, [.changed(collection: "todos", id: "t3", fields: ["text": "memo"], cleared: [])])
        transaction(harness, [.added(collection: "lists", id: "aside", fields: ["name": "Aside"])])
        transaction(harness, [.removed(collection: "lists", id: "home")])
        let coalesced = try await snapshots.next()
        XCTAssertEqual(coalesced?.ids, ["aside", "work"])
        // Against [home, work]: home removed, aside inserted, work's todo changed.
        XCTAssertEqual(coalesced?.diff, LiveQueryDiff(inserted: [0], removed: [0], updated: [1]))
        live.stop()
    }

    func testARelationshipWithinOneCollectionFollowsBothRoles() async throws {
        let harness = harness([
            .added(collection: "comments", id: "c1", fields: ["text": "root"]),
            .added(collection: "comments", id: "c2", fields: ["text": "reply", "parentId": "c1"])
        ])
        let comments = harness.client.collection("comments", as: Todo.self)
        let live = try comments.toMany(comments, referencedBy: "parentId").observe([:], FindOptions(sort: ["text": 1]))
        var snapshots = live.snapshots.makeAsyncIterator()
        let first = try await snapshots.next()
        XCTAssertEqual(first?.ids, ["c2", "c1"])
        XCTAssertEqual(first?.values.map { $0.related.map(\.text) }, [[], ["reply"]])
        // One change is both a source's and a target's: c2 is an entry and c1's reply.
        transaction(harness, [.changed(collection: "comments", id: "c2", fields: ["text": "zed"], cleared: [])])
        let changed = try await snapshots.next()
        XCTAssertEqual(changed?.ids, ["c1", "c2"])
        XCTAssertEqual(changed?.values.map { $0.related.map(\.text) }, [["zed"], []])
        XCTAssertEqual(changed?.diff.moved.count, 1)
        XCTAssertEqual(changed?.diff.updated, [0, 1])
        live.stop()
    }

    func testAnObservedRelatedQueryChangesOnItsScheduler() throws {
        guard #available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *) else { throw XCTSkip("Observation") }
        let harness = harness(homeAndWork)
        let lists = harness.client.collection("lists", as: TodoList.self)
        let todos = harness.client.collection("todos", as: Todo.self)
        let queue = DispatchQueue(label: "test.observed")
        let observed = try lists.toMany(todos, referencedBy: "listId").observed(
            ["_id": "work"], scheduler: .queue(queue))
        harness.client.database.notificationQueue.sync {}
        queue.sync {}
        XCTAssertEqual(observed.values.map { $0.related.map(\.text) }, [["report"]])
        transaction(harness, [.changed(collection: "todos", id: "t1", fields: ["listId": "work"], cleared: [])])
        queue.sync {}
        XCTAssertEqual(observed.values.first?.related.map(\.text).sorted(), ["milk", "report"])
        XCTAssertEqual(observed.diff, LiveQueryDiff(updated: [0]))
        observed.stop()
    }
}

/// The engine handed commits late: the database delivers each commit with its newest snapshot, which may be ahead of
/// that commit (deliveries queue on the notification queue while writers go on).
final class RelatedLiveQueryCoreTests: XCTestCase {
    func testATargetMovedTwiceBeforeItsCommitsAreDeliveredShowsInOneEntryOnly() throws {
        let database = Database()
        let commits = ChangesRecorder(database)
        func key(_ collection: String, _ id: String) -> DocumentKey {
            DocumentKey(collectionName: collection, documentID: id)
        }
        database.apply(["a", "b", "c", "d"].map { .added(key("lists", $0), ["name": .string($0)]) })
        database.apply(.added(key("todos", "t"), ["listId": "a"]))
        let core = RelatedLiveQueryCore(
            sourceCollection: "lists", query: try Query([:], FindOptions(sort: ["name": 1])),
            targetCollection: "todos", storage: .referencedBy(field: "listId"), relatedQuery: try Query([:]))
        core.seed(database.snapshot)
        let move = { (list: String) in
            database.apply(.changed(key("todos", "t"), ["listId": .string(list)], cleared: []))
        }
        move("b") // c1
        move("c") // c2
        let (c1, c2) = (commits.changes[2], commits.changes[3])
        // c1 is delivered when c2 is already visible; c3 commits before c2 is delivered.
        core.update(with: c1, snapshot: database.snapshot)
        XCTAssertEqual(Self.holders(of: "t", in: core), ["c"])
        move("d") // c3
        core.update(with: c2, snapshot: database.snapshot)
        XCTAssertEqual(Self.holders(of: "t", in: core), ["d"], "in one entry, never two")
        core.update(with: commits.changes[4], snapshot: database.snapshot)
        XCTAssertEqual(Self.holders(of: "t", in: core), ["d"])
    }

    private static func holders(of target: String, in core: RelatedLiveQueryCore) -> [String] {
        core.receivers.current.entries.filter { $0.related.contains { $0.id == target } }.map(\.source.id)
    }
}
