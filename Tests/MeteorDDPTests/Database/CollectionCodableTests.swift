import EJSON
import XCTest

@testable import MeteorDDP

final class CollectionCodableTests: XCTestCase {
    struct Player: Decodable, Equatable {
        var _id: String
        var name: String
        var score: Int
    }

    func testDocumentsDecodeIntoCodableTypesWithTheirIDs() throws {
        let database = Database()
        database.apply(
            .added(
                DocumentKey(collectionName: "players", documentID: "lovelace"), ["name": "Ada Lovelace", "score": 25]))
        let players = database.collection("players")
        XCTAssertEqual(
            try players.documents(as: Player.self), [Player(_id: "lovelace", name: "Ada Lovelace", score: 25)])
        XCTAssertEqual(try players.document(id: "lovelace", as: Player.self)?.score, 25)
        XCTAssertNil(try players.document(id: "nobody", as: Player.self))
    }
}
