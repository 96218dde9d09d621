/// The offline store's gate on the wire: a kept call goes out only once its record, and every kept record before it,
/// is on disk, so a call the server may run is never one a restart could forget.
///
/// Pure bookkeeping, owned by ``ClientCore`` (``ClientCore/durability``); without persistence nothing is kept and
/// every call passes at once.
struct DurabilityGate {
    /// Calls kept in the store, not completed yet.
    private(set) var kept: Set<String> = []
    /// Kept calls whose record is not on disk yet.
    private var notDurable: Set<String> = []
    /// Calls to send once they (and the ones before them) are on disk, in call order.
    private var waiting: [MethodCoordinator.Invocation] = []

    /// A call's record goes to the store now: it is kept, and not durable until ``becameDurable(_:)``.
    mutating func keep(_ id: String) {
        kept.insert(id)
        notDurable.insert(id)
    }

    /// A call restored from the store (durable already) is kept until it completes.
    mutating func restored(_ id: String) {
        kept.insert(id)
    }

    /// The calls of `invocations` that may go out now, in order; the rest wait (behind any already waiting).
    mutating func admit(_ invocations: [MethodCoordinator.Invocation]) -> [MethodCoordinator.Invocation] {
        guard !notDurable.isEmpty || !waiting.isEmpty else { return invocations }
        var admitted: [MethodCoordinator.Invocation] = []
        for invocation in invocations {
            if waiting.isEmpty, !notDurable.contains(invocation.id) {
                admitted.append(invocation)
            } else {
                waiting.append(invocation)
            }
        }
        return admitted
    }

    /// Call `id`'s record is on disk: the waiting calls now free to go, in order.
    mutating func becameDurable(_ id: String) -> [MethodCoordinator.Invocation] {
        notDurable.remove(id)
        var released: [MethodCoordinator.Invocation] = []
        while let first = waiting.first, !notDurable.contains(first.id) {
            released.append(waiting.removeFirst())
        }
        return released
    }

    /// A new socket: the waiting calls go out again through the method blocks instead.
    mutating func socketReset() {
        waiting = []
    }

    /// Whether call `id` is kept in the store (without persistence, answered without hashing the id).
    func isKept(_ id: String) -> Bool {
        !kept.isEmpty && kept.contains(id)
    }

    /// Call `id` completed: returns whether it was kept (its record then leaves the store).
    mutating func completed(_ id: String) -> Bool {
        guard !kept.isEmpty else { return false }
        return kept.remove(id) != nil
    }

    /// Call `id`'s deadline passed: if it waited for the disk it leaves the line, never to be sent. Returns whether it
    /// waited, and the calls behind it now free to go, in order.
    mutating func withdraw(_ id: String) -> (waited: Bool, released: [MethodCoordinator.Invocation]) {
        guard let index = waiting.firstIndex(where: { $0.id == id }) else { return (false, []) }
        waiting.remove(at: index)
        guard index == 0 else { return (true, []) }
        var released: [MethodCoordinator.Invocation] = []
        while let first = waiting.first, !notDurable.contains(first.id) {
            released.append(waiting.removeFirst())
        }
        return (true, released)
    }
}
