/// Bounds what the server can make the client cache for collections the app never declared.
///
/// A collection is *declared* once the app asks for it with ``DDPClient/collection(_:idGeneration:)`` (Meteor's
/// `new Mongo.Collection(name)`). Data for other collections is still cached, as Meteor keeps it for stores that may
/// be declared later, but only up to ``DDPClient/Configuration/maxDocumentsInUndeclaredCollections`` documents in all:
/// past the limit, `added` for a new document of an undeclared collection is dropped (and `changed`/`removed` for
/// it ignored), and the limit is reported once per collection. Declaring the collection lifts the limit for it (data
/// dropped before stays missing until the server sends it again, after a reconnect or a new subscription).
/// Confined to the client queue.
struct UndeclaredCollections {
    /// What to do with a data message.
    enum Admission: Equatable {
        case apply
        case drop
        /// Drop it, and report that the limit was reached for this collection (the first time).
        case dropAndReport
    }

    private(set) var declared: Set<String> = []
    /// The declared collection found last: a flood names one collection, and comparing its name (the same string,
    /// frame after frame) is cheaper than hashing it. Names are never undeclared.
    private var lastDeclared: String?
    /// The documents of undeclared collections in the cache, by collection.
    private var kept: [String: Set<String>] = [:]
    private var keptCount = 0
    private var reported: Set<String> = []
    let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    mutating func declare(_ collection: String) {
        guard declared.insert(collection).inserted else { return }
        keptCount -= kept.removeValue(forKey: collection)?.count ?? 0
    }

    mutating func added(_ collection: String, _ id: String) -> Admission {
        if isDeclared(collection) { return .apply }
        if kept[collection]?.contains(id) == true { return .apply }
        guard keptCount < limit else { return reported.insert(collection).inserted ? .dropAndReport : .drop }
        kept[collection, default: []].insert(id)
        keptCount += 1
        return .apply
    }

    mutating func changed(_ collection: String, _ id: String) -> Admission {
        isDeclared(collection) || kept[collection]?.contains(id) == true ? .apply : .drop
    }

    mutating func removed(_ collection: String, _ id: String) -> Admission {
        if isDeclared(collection) { return .apply }
        guard kept[collection]?.remove(id) != nil else { return .drop }
        keptCount -= 1
        return .apply
    }

    private mutating func isDeclared(_ collection: String) -> Bool {
        if collection == lastDeclared { return true }
        guard declared.contains(collection) else { return false }
        lastDeclared = collection
        return true
    }

    /// The cache was emptied (a reconnect's reset at quiescence): nothing undeclared is kept any more.
    mutating func reset() {
        kept = [:]
        keptCount = 0
        reported = []
    }
}
