import EJSON

/// What a restored call's stub did, as its judgement at reconciliation compares it with the server's data.
extension DDPClient {
    /// What each restored call that may complete with a refusal must find on the server to be
    /// ``RestoredCallOutcome/Result/alreadyApplied(_:)``: the calls not answered before the restart, and those whose
    /// saved answer is an error (a re-sent insert's 409, the effect already there). Each compares exactly what its
    /// stub did, less what a later restored call's stub also wrote on the same document (that call may have changed it
    /// since: `bump` after `addItem`). Calls recorded before effects were stored compare the whole stored document.
    static func restoredStubEffects(_ state: StoredState) -> [String: [StoredStubEffect]] {
        let judged = state.methods.filter { method in
            switch method.result {
            case nil, .error?: return true
            case .value?: return false
            }
        }
        guard !judged.isEmpty else { return [:] }
        var storedDocuments: [DocumentKey: EJSONObject]?
        var effects: [String: [StoredStubEffect]] = [:]
        /// What the stubs of the calls after the one at hand wrote on a document (walking back).
        enum LaterWrites {
            case fields(Set<String>)
            /// One of them left the document absent: nothing of it can be judged.
            case removed
        }
        var later: [DocumentKey: LaterWrites] = [:]
        let judgedIDs = Set(judged.map(\.id))
        for method in state.methods.reversed() {
            let own: [StoredStubEffect]
            if let recorded = method.stubEffects {
                own = recorded
            } else {
                if storedDocuments == nil {
                    storedDocuments = Dictionary(state.documents.map { ($0.key, $0.fields) }, uniquingKeysWith: { $1 })
                }
                own = method.stubWrote.map { StoredStubEffect(key: $0, set: storedDocuments?[$0]) }
            }
            if judgedIDs.contains(method.id) {
                effects[method.id] = own.compactMap { effect in
                    switch later[effect.key] {
                    case nil: return effect
                    case .removed?: return nil
                    case .fields(let names)?:
                        guard effect.set != nil else { return nil }
                        var kept = effect
                        kept.set = effect.set?.filter { !names.contains($0.key) }
                        kept.unset = effect.unset.filter { !names.contains($0) }
                        return kept
                    }
                }
            }
            for effect in own {
                guard let set = effect.set else {
                    later[effect.key] = .removed
                    continue
                }
                var names: Set<String>
                switch later[effect.key] {
                case .removed?: continue
                case .fields(let written)?: names = written
                case nil: names = []
                }
                names.formUnion(set.keys)
                names.formUnion(effect.unset)
                later[effect.key] = .fields(names)
            }
        }
        return effects
    }
}
