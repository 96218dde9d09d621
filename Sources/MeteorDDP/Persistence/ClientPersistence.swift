import Dispatch
import EJSON

/// A client's offline store at work: its settings, the write-behind and the restored calls' outcomes. Immutable (the
/// state the session keeps for the store is the core's: ``DurabilityGate``, ``OfflineState``).
final class ClientPersistence: Sendable {

    let settings: Persistence
    let writer: WriteBehind
    let restoredCalls: RestoredCalls

    /// The restored calls by id (set once, at launch).
    let restoredByID: [String: RestoredCall]

    init(settings: Persistence, writer: WriteBehind, restoredCalls: RestoredCalls) {
        self.settings = settings
        self.writer = writer
        self.restoredCalls = restoredCalls
        restoredByID = Dictionary(
            restoredCalls.calls.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Opens the store and reads it (on the thread creating the client). Never throws: problems go in the report.
    static func open(_ settings: Persistence?) -> (ClientPersistence?, StoredState, RestoreReport) {
        var report = RestoreReport()
        guard let settings else { return (nil, StoredState(), report) }
        var store: any ClientStore
        do {
            store = try settings.openStore()
        } catch {
            report.problem =
                (error as? PersistenceError) ?? PersistenceError(.cannotOpen, path: nil, reason: "\(error)")
            return (nil, StoredState(), report)
        }
        let path = (store as? SQLiteStore)?.fileURL.path
        report.problem = (store as? SQLiteStore)?.openingProblem
        var state = StoredState()
        do {
            do {
                state = try store.load()
            } catch let error where SQLiteStore.isCorruption(error) {
                // Damage past the header shows only when the pages are read: the file goes aside as at opening.
                guard let damaged = store as? SQLiteStore else { throw error }
                let replacement = try SQLiteStore.replacingDamagedFile(of: damaged, error)
                store = replacement.0
                report.problem = replacement.1
            }
        } catch {
            report.problem = PersistenceError(.readFailed, path: path, reason: "\(error)")
            // What could not be read would otherwise be completed by later writes into a mix of two states.
            try? store.clear(keepingDocuments: false, keepingCalls: [])
        }
        report.documents = state.documents.count
        report.methods = state.methods.count
        report.subscriptions = state.subscriptions.count
        // One call per id (a custom store might list one twice).
        var seen = Set<String>()
        state.methods = state.methods.filter { seen.insert($0.id).inserted }
        let calls = state.methods.map {
            RestoredCall(id: $0.id, name: $0.name, params: $0.params, randomSeed: $0.randomSeed)
        }
        let persistence = ClientPersistence(
            settings: settings,
            writer: WriteBehind(store: store),
            restoredCalls: RestoredCalls(calls: calls)
        )
        return (persistence, state, report)
    }
}
